//! codemode: a runtime for Code Mode.
//!
//! A model writes one JavaScript or TypeScript program; [`run_code::run_code_tool`] runs it
//! in a sandboxed QuickJS engine where every visible tool is `await tools.<name>(args)`.
//! Each such call re-enters the same dispatch pipeline as a direct call
//! ([`Registry::dispatch`]): argument validation, policy hooks, execution with a
//! cancellation signal, output validation.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use codemode::prelude::*;
//!
//! let registry = Registry::new();
//! let add = Tool::builder("add")
//!     .description("Add two numbers.")
//!     .parameters(ParameterSchema::new([
//!         ("a", Node::number().required()),
//!         ("b", Node::number().required()),
//!     ]))
//!     .execute(|arguments, _exec| async move {
//!         let sum = arguments["a"].as_f64().unwrap_or(0.0) + arguments["b"].as_f64().unwrap_or(0.0);
//!         Ok(serde_json::json!(sum))
//!     })
//!     .build()
//!     .unwrap();
//! let _add = registry.register(add).unwrap();
//! let _run = registry.register(run_code_tool(RunCodeConfig::default())).unwrap();
//!
//! let outcome = registry
//!     .call("run_code", serde_json::json!({"code": "const [x, y] = await Promise.all([tools.add({a: 1, b: 2}), tools.add({a: 3, b: 4})]);\nx * y"}))
//!     .await;
//! assert_eq!(outcome.value().unwrap()["result"], 21);
//! # });
//! ```
//!
//! # Where things are
//!
//! - The crate root: the core types of a tool and a call — [`Registry`], [`Tool`],
//!   [`Exec`], [`Arguments`], [`Outcome`], [`ToolError`] — and the built-in [`FileTools`].
//! - [`schema`]: the node language of tool schemas, JSON Schema import and export,
//!   validation.
//! - [`hooks`]: the policy stages of the pipeline and the ready-made wrappers
//!   ([`hooks::Deadline`], [`hooks::Retry`], [`hooks::Metrics`]).
//! - [`cards`]: what a UI shows for a call and its outcome.
//! - [`run_code`]: the `run_code` tool, its limits and its canonical result.
//! - [`check`]: the static check of a program (`codemode check`).
//! - [`declarations`]: the TypeScript declarations of the tools a program sees.
//! - [`manifest`]: command-backed tools from a JSON manifest.
//! - [`mcp`]: MCP; [`mcp::server`] serves `run_code` to MCP clients (`codemode mcp`).
//! - [`prelude`]: the names most hosts need, in one `use`.
//!
//! `ARCHITECTURE.md` in the repository walks one call through the files and defines the
//! words the API uses; the README describes programs, results and limits.

#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

#[doc(hidden)]
pub mod bench_support;
mod builtin;
pub mod check;
mod child;
pub mod declarations;
pub mod discovery;
mod dispatch;
pub mod manifest;
pub mod mcp;
mod program;
pub mod report;
pub mod run_code;
mod sandbox;
pub mod schema;
pub mod tokens;
mod value;

pub use builtin::{AllowedHosts, FileTools, web_fetch_tool};
pub use child::kill_process_groups;
pub use dispatch::jobs;
pub use dispatch::{
    Agent, AgentDisposed, Arguments, BuildError, CallId, CallToken, Content, ErrorKind, Exec,
    Execute, ExecuteFuture, Injection, MAX_TOOL_NAME_LEN, Outcome, RESERVED_TOOL_NAMES,
    RegisterError, Registry, Request, Tool, ToolAnnotations, ToolBuilder, ToolError, ToolHandle,
    ToolSchema, Visibility, tool_alias,
};
pub use value::MAX_DEPTH;

pub mod hooks {
    //! The policy stages of the pipeline, as closures or trait objects, and the ready-made
    //! around-wrappers.
    //!
    //! | stage | register with | a hook receives | it answers |
    //! | --- | --- | --- | --- |
    //! | 2 | [`Registry::pre_execute`](crate::Registry::pre_execute) | `exec` | a [`Decision`]: allow, deny(reason), ask(prompt) |
    //! | 2 | [`Registry::set_approver`](crate::Registry::set_approver) | `exec`, `prompt` | an [`Approval`] (async) |
    //! | 3 | [`Registry::guard`](crate::Registry::guard) | `exec` | `Err(reason)` to deny, for good |
    //! | 4 | [`Registry::around`](crate::Registry::around) | `exec`, [`Next`] | the output (async): [`around_fn`], [`Deadline`], [`Retry`], [`Metrics`] |
    //! | 7 | [`Registry::post_execute`](crate::Registry::post_execute) | `exec`, [`PostOutcome`] | changes to the outcome |
    //! | 8 | [`Registry::observe`](crate::Registry::observe) | `exec`, [`Outcome`](crate::Outcome) | nothing: it only sees |
    //!
    //! Each registration but the approver's returns a [`HookHandle`]; dropping it removes
    //! the hook. The approver is replaced by the next `set_approver`.
    pub use crate::dispatch::{
        Approval, Approver, Around, Deadline, Decision, Guard, HookHandle, Metrics,
        MetricsSnapshot, Next, Observer, PostExecute, PostOutcome, PreExecute, Progress,
        ProgressSink, Retry, RunUsage, ToolMetrics, around_fn,
    };
}

pub mod cards {
    //! What a UI shows for a call ([`CallCard`], from the arguments alone, when the call
    //! starts) and for its outcome ([`ResultCard`]): generic, terminal, diff, search, web.
    //! A tool supplies them with
    //! [`ToolBuilder::present_call`](crate::ToolBuilder::present_call) and
    //! [`ToolBuilder::present_result`](crate::ToolBuilder::present_result).
    pub use crate::dispatch::{
        CallCard, CardRecord, Hunk, Location, ResultCard, SearchGroup, SearchMatch,
    };
}

pub mod prelude {
    //! The names most hosts need: `use codemode::prelude::*;`.
    pub use crate::hooks::{Decision, around_fn};
    pub use crate::run_code::{Limits, RunCodeConfig, run_code_tool};
    pub use crate::schema::{Node, ParameterSchema, ValueSchema};
    pub use crate::{
        Arguments, Content, ErrorKind, Exec, FileTools, Outcome, Registry, Tool, ToolError,
    };
}
