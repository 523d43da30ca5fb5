//! Tools, the registry and the dispatch pipeline (DESIGN §3).
//!
//! A direct call from the host and a nested call from a `run_code` program are the same
//! call: both go through [`Registry::dispatch`] and every stage below, in this order:
//!
//! 1. argument validation (`validate.rs`);
//! 5. `execute`, with a cancellation signal;
//! 6. output snapshot and validation, then `render` and `presentation_meta` (`output.rs`;
//!    rendering is skipped for nested calls).

mod agent;
mod call;
mod card;
mod outcome;
mod output;
mod pipeline;
mod registry;
mod tool;
mod validate;

pub use agent::{Agent, AgentDisposed, Injection};
pub use call::{Arguments, CallId, CallToken, Exec};
pub use card::{CallCard, Hunk, Location, ResultCard, SearchGroup, SearchMatch};
pub use outcome::{Content, Outcome};
pub use registry::{
    MAX_TOOL_NAME_LEN, RESERVED_TOOL_NAMES, RegisterError, Registry, Request, ToolHandle,
    tool_alias,
};
pub use tool::{
    BuildError, ErrorKind, Execute, ExecuteFuture, Tool, ToolBuilder, ToolError, ToolSchema,
    Visibility,
};
