//! Integration tests: one binary (as wasmtime's `tests/all`), one module per area.

mod act;
mod builtin;
mod cap;
mod check;
mod cli;
mod declarations;
mod discovery;
mod dispatch;
mod hostile;
mod import;
mod jobs;
mod json_schema_suite;
mod manifest;
mod mcp_client;
mod mcp_server;
mod oracle;
mod pause;
mod pipeline;
mod readme;
mod run_code;
mod sandbox;
mod schema;
mod support;
mod test262;
mod tokens;
mod values;
