//! codemode: a runtime for Code Mode.
//!
//! A model writes one JavaScript or TypeScript program; [`run_code_tool`] runs it in a
//! sandboxed QuickJS engine where every visible tool is `await tools.<name>(args)`. Each such
//! call re-enters the same dispatch pipeline as a direct call ([`Registry::dispatch`]):
//! argument validation, execution with a cancellation signal, output validation.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use codemode::{Registry, RunCodeConfig, Tool, run_code_tool};
//! use codemode::schema::{Node, ParameterSchema};
//!
//! let registry = Registry::new();
//! let add = Tool::builder("add")
//!     .description("Add two numbers.")
//!     .parameters(ParameterSchema::new([
//!         ("a", Node::number().required()),
//!         ("b", Node::number().required()),
//!     ]))
//!     .execute(|args, _exec| async move {
//!         let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
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
//! The contract is `DESIGN.md`; the modules follow its sections: [`schema`] (§1), values
//! (§2), dispatch (§3), the sandbox and `run_code` (§5), declarations (§6, the
//! `codemode-codegen` crate), and the command line (§7, the `codemode` binary).

#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

#[doc(hidden)]
pub mod bench_support;
mod builtin;
mod check;
mod dispatch;
pub mod manifest;
mod run_code;
mod sandbox;
pub mod schema;
mod value;

pub use builtin::FileTools;
pub use check::{Diagnostic, DiagnosticKind, TypescriptProgram, check_program, typescript_program};
pub use codemode_codegen::{Layout, SANDBOX_GLOBALS, ToolDecl};
pub use dispatch::{
    Agent, AgentDisposed, Approval, Approver, Arguments, Around, BuildError, CallCard, CallId,
    CallToken, Content, Deadline, Decision, ErrorKind, Exec, Execute, ExecuteFuture, Guard,
    HookHandle, Hunk, Injection, Location, MAX_TOOL_NAME_LEN, Metrics, MetricsSnapshot, Next,
    Observer, Outcome, PostExecute, PostOutcome, PreExecute, RESERVED_TOOL_NAMES, RegisterError,
    Registry, Request, ResultCard, Retry, SearchGroup, SearchMatch, Tool, ToolBuilder, ToolError,
    ToolHandle, ToolMetrics, ToolSchema, Visibility, tool_alias,
};
pub use run_code::{
    RUN_CODE, RunCodeConfig, SpillConfig, render_text, run_code_output_schema, run_code_tool,
};
pub use sandbox::{
    CallRecord, CallStatus, Limits, LogEntry, LogLevel, MIN_MEMORY, ProgramError, ProgramErrorKind,
};
pub use value::{MAX_DEPTH, is_identifier, json_type_name};

/// The tools a program in `registry` sees, as the code generator takes them: name, alias
/// (when the name is not an identifier), description, and both schemas as JSON Schema.
pub fn tool_decls(registry: &Registry) -> Vec<codemode_codegen::ToolDecl> {
    registry
        .sandbox_tools()
        .iter()
        .map(|t| {
            tool_decl(
                t.name(),
                t.description(),
                t.parameters().to_json_schema(),
                t.output().to_json_schema(),
            )
        })
        .collect()
}

/// The tools of an MCP `tools/list` result (`{"tools": [{name, description, inputSchema,
/// outputSchema?}]}`) as the code generator takes them; an absent `outputSchema` is any
/// JSON (`true`), entries without a string `name` are skipped.
pub fn mcp_tool_decls(list: &serde_json::Value) -> Vec<codemode_codegen::ToolDecl> {
    let Some(tools) = list.get("tools").and_then(serde_json::Value::as_array) else {
        return Vec::new();
    };
    tools
        .iter()
        .filter_map(|t| {
            Some(tool_decl(
                t.get("name")?.as_str()?,
                t.get("description")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or(""),
                t.get("inputSchema")
                    .cloned()
                    .unwrap_or(serde_json::Value::Bool(true)),
                t.get("outputSchema")
                    .cloned()
                    .unwrap_or(serde_json::Value::Bool(true)),
            ))
        })
        .collect()
}

fn tool_decl(
    name: &str,
    description: &str,
    input_schema: serde_json::Value,
    output_schema: serde_json::Value,
) -> codemode_codegen::ToolDecl {
    let alias = tool_alias(name);
    codemode_codegen::ToolDecl {
        name: name.to_owned(),
        alias: (alias != name).then_some(alias),
        description: description.to_owned(),
        input_schema,
        output_schema,
    }
}

/// The TypeScript declarations (DESIGN §6) of the tools a program in `registry` sees:
/// `ToolArgsMap`, `ToolOutputMap`, `tools` and `ToolCallError`, in `layout`
/// ([`Layout::Pretty`] for files, [`Layout::Compact`] for the model).
///
/// # Errors
/// When two tools would share a member of `tools` (registration normally prevents it).
pub fn declarations(
    registry: &Registry,
    layout: Layout,
) -> Result<String, codemode_codegen::DeclarationError> {
    codemode_codegen::declarations_with(&tool_decls(registry), layout)
}
