//! MCP both ways (the Model Context Protocol, <https://modelcontextprotocol.io>).
//!
//! - **Client** (a tool source, beside [`crate::manifest`]): [`connect_all`] reaches
//!   upstream MCP servers ([`ServerConfig`]: a command over stdio, or a URL over streamable
//!   HTTP; from `--mcp NAME=COMMAND` with [`ServerConfig::parse_flag`] or an `mcpServers`
//!   file with [`load_config`]) and registers their tools as ordinary tools named
//!   `NAME.tool` (in programs `tools["NAME.tool"](args)` or the alias
//!   `tools.NAME_tool(args)`). How a result becomes a value is in [`content`]'s table
//!   (and the README).
//! - **Server** (a front end beside the command line): [`server`] serves `run_code` (and,
//!   if asked, every tool directly) to any MCP client over stdio or streamable HTTP, as
//!   `codemode mcp` does, calling the registry as any host does.

mod client;
mod config;
pub mod content;
pub mod server;
mod stdio;

pub use client::{
    CLOSE_GRACE, ConnectError, Connection, MAX_MESSAGE_BYTES, MAX_MESSAGE_DEPTH, connect_all,
};
pub use config::{
    ConfigError, DEFAULT_CALL_TIMEOUT_MS, DEFAULT_STARTUP_TIMEOUT_MS, MAX_CONFIG_BYTES,
    ServerConfig, Transport, check_server_name, load_config, parse_config,
};
