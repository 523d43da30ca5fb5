//! MCP, the Model Context Protocol: [`server`] serves `run_code` (and, if asked, every
//! tool directly) to any MCP client over stdio or streamable HTTP, as `codemode mcp` does.
//! The dispatch core knows nothing of MCP: the server is a front end beside the command
//! line, calling the registry as any host does.

pub mod server;
