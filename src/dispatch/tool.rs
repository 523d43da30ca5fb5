//! A tool definition: name, description, schemas, renderer and `execute`.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::call::{Arguments, Exec};
use super::card::{CallCard, ResultCard};
use super::outcome::{Content, Outcome};
use crate::schema::{DefinitionError, Node, ParameterSchema, ValueSchema};

/// Why a tool call failed. Model code sees only the message; the kind is for hosts,
/// policies and observers (internal error codes never reach model code).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    kind: ErrorKind,
    message: String,
}

/// The class of a failed call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The tool ran and reported a failure (an `Err` from `execute`).
    Failed,
    /// No visible tool has that name.
    UnknownTool,
    /// The arguments did not match the parameters schema.
    InvalidArguments,
    /// The output was not lossless JSON or did not match the output schema.
    InvalidOutput,
    /// A policy stage refused the call.
    Denied,
    /// The call's signal was cancelled.
    Cancelled,
    /// A deadline passed.
    Timeout,
    /// `execute`, a renderer or a hook panicked.
    Panicked,
    /// A runtime limit was reached (calls, bytes, …).
    Limit,
    /// A policy asked for approval and nobody could answer now: inside a `run_code` run
    /// that can pause (no approver configured), the run pauses at this call and resumes
    /// after the decision (see `run_code_resume`). Never the outcome a program sees.
    NeedsApproval,
}

impl ErrorKind {
    /// The kind named `name` by [`ErrorKind::as_str`].
    pub fn parse(name: &str) -> Option<ErrorKind> {
        Some(match name {
            "failed" => ErrorKind::Failed,
            "unknown_tool" => ErrorKind::UnknownTool,
            "invalid_arguments" => ErrorKind::InvalidArguments,
            "invalid_output" => ErrorKind::InvalidOutput,
            "denied" => ErrorKind::Denied,
            "cancelled" => ErrorKind::Cancelled,
            "timeout" => ErrorKind::Timeout,
            "panicked" => ErrorKind::Panicked,
            "limit" => ErrorKind::Limit,
            "needs_approval" => ErrorKind::NeedsApproval,
            _ => return None,
        })
    }

    /// A stable lower-case name for logs and host APIs (never shown to model code).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Failed => "failed",
            ErrorKind::UnknownTool => "unknown_tool",
            ErrorKind::InvalidArguments => "invalid_arguments",
            ErrorKind::InvalidOutput => "invalid_output",
            ErrorKind::Denied => "denied",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Panicked => "panicked",
            ErrorKind::Limit => "limit",
            ErrorKind::NeedsApproval => "needs_approval",
        }
    }
}

impl ToolError {
    /// A failure of the tool itself, with a message the model can act on.
    pub fn new(message: impl Into<String>) -> Self {
        Self::with_kind(ErrorKind::Failed, message)
    }

    /// A failure of the given kind.
    pub fn with_kind(kind: ErrorKind, message: impl Into<String>) -> Self {
        ToolError {
            kind,
            message: message.into(),
        }
    }

    /// The call was cancelled through its signal.
    pub fn cancelled() -> Self {
        Self::with_kind(ErrorKind::Cancelled, "the call was cancelled")
    }

    /// The class of the failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The model-facing message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<std::io::Error> for ToolError {
    fn from(e: std::io::Error) -> Self {
        ToolError::new(e.to_string())
    }
}

/// The future `execute` returns.
pub type ExecuteFuture = BoxFuture<'static, Result<Value, ToolError>>;

/// Runs a tool. Implemented for every `Fn(Arguments, Exec) -> impl Future<Output =
/// Result<Value, ToolError>>` closure, so a closure is a tool body.
///
/// `execute` must observe [`Exec::signal`]: when it is cancelled, stop and return
/// [`ToolError::cancelled`].
pub trait Execute: Send + Sync + 'static {
    /// Starts the call.
    fn execute(&self, arguments: Arguments, exec: Exec) -> ExecuteFuture;
}

impl<F, Fut> Execute for F
where
    F: Fn(Arguments, Exec) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    fn execute(&self, arguments: Arguments, exec: Exec) -> ExecuteFuture {
        Box::pin(self(arguments, exec))
    }
}

type RenderFn = dyn Fn(&Value, &Value) -> Vec<Content> + Send + Sync;
type MetaFn = dyn Fn(&Value, &Value) -> Option<Value> + Send + Sync;
type DescribeFn = dyn Fn(&str, &super::Registry) -> String + Send + Sync;
type PresentCallFn = dyn Fn(&Value) -> CallCard + Send + Sync;
type PresentResultFn = dyn Fn(&Value, &Outcome) -> ResultCard + Send + Sync;

/// What a tool does to the world, as MCP's `ToolAnnotations` says it (hints, not
/// guarantees; absent means unknown): whether it only reads, whether its changes may
/// destroy, whether repeating a call changes nothing more, whether it reaches beyond the
/// host (the network, other systems). Serialised with MCP's names (`readOnlyHint`, …).
/// Policies read them (`codemode --read-only` refuses every tool not marked read-only),
/// and the declarations show them in each tool's JSDoc.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// The tool does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// Its changes may destroy (meaningful when it is not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it again with the same arguments changes nothing more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// It reaches an open world (the network) rather than a closed one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// A tool that only reads, in a closed world (the built-in file readers).
    pub fn read_only() -> ToolAnnotations {
        ToolAnnotations {
            read_only_hint: Some(true),
            destructive_hint: None,
            idempotent_hint: Some(true),
            open_world_hint: Some(false),
        }
    }

    /// A tool that changes things: `destructive` when its changes may destroy.
    pub fn writes(destructive: bool, idempotent: bool) -> ToolAnnotations {
        ToolAnnotations {
            read_only_hint: Some(false),
            destructive_hint: Some(destructive),
            idempotent_hint: Some(idempotent),
            open_world_hint: Some(false),
        }
    }

    /// The same, reaching the open world (`open_world_hint: true`).
    pub fn open_world(mut self) -> ToolAnnotations {
        self.open_world_hint = Some(true);
        self
    }

    /// The annotations of an MCP tool's `annotations` object; unknown or ill-typed keys
    /// are ignored.
    pub fn from_mcp(value: &Value) -> ToolAnnotations {
        let hint = |k: &str| value.get(k).and_then(Value::as_bool);
        ToolAnnotations {
            read_only_hint: hint("readOnlyHint"),
            destructive_hint: hint("destructiveHint"),
            idempotent_hint: hint("idempotentHint"),
            open_world_hint: hint("openWorldHint"),
        }
    }

    /// Whether the tool says it only reads.
    pub fn is_read_only(&self) -> bool {
        self.read_only_hint == Some(true)
    }

    /// Whether no hint is given.
    pub fn is_empty(&self) -> bool {
        *self == ToolAnnotations::default()
    }
}

/// Whether a tool appears to models: in `tools` inside `run_code` and in
/// [`Registry::schemas`](super::Registry::schemas).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Visibility {
    /// Shown everywhere (the default).
    #[default]
    Visible,
    /// Callable directly by the host, but hidden from models: not in `tools`, not in
    /// `schemas()`.
    Hidden,
    /// Shown in `schemas()` for direct calls, but not in `tools` inside programs (used by
    /// `run_code` itself).
    NotInSandbox,
}

/// A tool definition: what the model sees and what runs. Build one with [`Tool::builder`].
///
/// ```
/// use codemode::{Tool, schema::{Node, ParameterSchema, ValueSchema}};
/// let echo = Tool::builder("echo")
///     .description("Echo the text back.")
///     .parameters(ParameterSchema::new([("text", Node::string().required())]))
///     .output(ValueSchema::new(Node::string()))
///     .execute(|args, _exec| async move { Ok(args["text"].clone()) })
///     .build()
///     .unwrap();
/// assert_eq!(echo.name(), "echo");
/// ```
#[derive(Clone)]
pub struct Tool {
    pub(crate) inner: Arc<ToolInner>,
}

pub(crate) struct ToolInner {
    pub(crate) name: Arc<str>,
    pub(crate) description: String,
    pub(crate) parameters: ParameterSchema,
    pub(crate) output: ValueSchema,
    pub(crate) execute: Arc<dyn Execute>,
    pub(crate) render: Option<Arc<RenderFn>>,
    pub(crate) presentation_meta: Option<Arc<MetaFn>>,
    pub(crate) present_call: Option<Arc<PresentCallFn>>,
    pub(crate) present_result: Option<Arc<PresentResultFn>>,
    pub(crate) validate_arguments: bool,
    pub(crate) visibility: Visibility,
    pub(crate) describe: Option<Arc<DescribeFn>>,
    /// Whether a call may ask to run as a background job (`run_in_background: true`).
    pub(crate) run_in_background: bool,
    pub(crate) annotations: ToolAnnotations,
    pub(crate) deferred: bool,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.inner.name)
            .field("visibility", &self.inner.visibility)
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// Starts a definition named `name`.
    pub fn builder(name: impl Into<String>) -> ToolBuilder {
        ToolBuilder {
            name: name.into(),
            description: String::new(),
            parameters: ParameterSchema::empty(),
            output: ValueSchema::default(),
            execute: None,
            render: None,
            presentation_meta: None,
            present_call: None,
            present_result: None,
            validate_arguments: true,
            visibility: Visibility::Visible,
            describe: None,
            run_in_background: false,
            annotations: ToolAnnotations::default(),
            deferred: false,
        }
    }

    /// The name models call.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// What the model reads about the tool (the static text; see
    /// [`ToolBuilder::describe_with`]).
    pub fn description(&self) -> &str {
        &self.inner.description
    }

    /// The description as listed in `registry`.
    pub fn description_in(&self, registry: &super::Registry) -> String {
        match &self.inner.describe {
            Some(f) => f(&self.inner.description, registry),
            None => self.inner.description.clone(),
        }
    }

    /// The arguments schema.
    pub fn parameters(&self) -> &ParameterSchema {
        &self.inner.parameters
    }

    /// The canonical output schema.
    pub fn output(&self) -> &ValueSchema {
        &self.inner.output
    }

    /// Who sees the tool.
    pub fn visibility(&self) -> Visibility {
        self.inner.visibility
    }

    /// What the tool does to the world (see [`ToolAnnotations`]).
    pub fn annotations(&self) -> &ToolAnnotations {
        &self.inner.annotations
    }

    /// Whether `run_code`'s description lists this tool by name only (see
    /// [`ToolBuilder::deferred`]).
    pub fn is_deferred(&self) -> bool {
        self.inner.deferred
    }

    /// The model-facing projection: `{"name", "description", "input_schema",
    /// "output_schema"}` with JSON Schema draft 2020-12. The description is the static
    /// one; [`Registry::schemas`](super::Registry::schemas) gives the one a registry lists.
    pub fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: self.inner.name.to_string(),
            description: self.inner.description.clone(),
            input_schema: self.inner.parameters.to_json_schema(),
            output_schema: self.inner.output.to_json_schema(),
            annotations: self.inner.annotations.clone(),
        }
    }

    /// The card a UI shows when a call of this tool starts. Soft-validated: arguments that
    /// do not match the parameters schema (malformed, or from an older version of the tool),
    /// a tool without a projector, or a projector that panics give the generic card.
    pub fn present_call(&self, arguments: &Value) -> CallCard {
        if let Some(f) = &self.inner.present_call
            && self.inner.parameters.validate(arguments).is_ok()
            && let Ok(card) =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(arguments)))
        {
            return card;
        }
        CallCard::Generic {
            title: self.inner.name.to_string(),
            kind: "other".to_owned(),
            raw_input: arguments.clone(),
            locations: Vec::new(),
        }
    }

    /// The card a UI shows for an outcome of this tool. Soft-validated like
    /// [`Tool::present_call`]; also generic when the outcome's value does not match the output
    /// schema.
    pub fn present_result(&self, arguments: &Value, outcome: &Outcome) -> ResultCard {
        if let Some(f) = &self.inner.present_result
            && self.inner.parameters.validate(arguments).is_ok()
            && outcome
                .value()
                .is_none_or(|v| self.inner.output.validate(v).is_ok())
            && let Ok(card) =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(arguments, outcome)))
        {
            return card;
        }
        ResultCard::Generic {
            title: self.inner.name.to_string(),
            text: outcome.text(),
            is_error: outcome.is_error(),
            locations: Vec::new(),
        }
    }

    /// Renders a successful value for the model: the tool's renderer, or by default a
    /// string as itself and anything else as compact JSON.
    pub(crate) fn render(&self, arguments: &Value, output: &Value) -> Vec<Content> {
        match &self.inner.render {
            Some(r) => r(arguments, output),
            None => vec![Content::text(match output {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })],
        }
    }
}

/// The model-facing projection of a tool (what native tool calling and MCP list).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ToolSchema {
    /// The tool's name.
    pub name: String,
    /// The tool's description.
    pub description: String,
    /// Arguments, as JSON Schema draft 2020-12.
    pub input_schema: Value,
    /// Canonical output, as JSON Schema draft 2020-12.
    pub output_schema: Value,
    /// What the tool does to the world (left out when it gives no hint).
    #[serde(skip_serializing_if = "ToolAnnotations::is_empty")]
    pub annotations: ToolAnnotations,
}

/// Builds a [`Tool`]; see [`Tool::builder`].
pub struct ToolBuilder {
    name: String,
    description: String,
    parameters: ParameterSchema,
    output: ValueSchema,
    execute: Option<Arc<dyn Execute>>,
    render: Option<Arc<RenderFn>>,
    presentation_meta: Option<Arc<MetaFn>>,
    present_call: Option<Arc<PresentCallFn>>,
    present_result: Option<Arc<PresentResultFn>>,
    validate_arguments: bool,
    visibility: Visibility,
    describe: Option<Arc<DescribeFn>>,
    run_in_background: bool,
    annotations: ToolAnnotations,
    deferred: bool,
}

/// Why a definition was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No `execute` was given.
    #[error("tool `{0}` has no execute function")]
    MissingExecute(String),
    /// A schema has a definition error.
    #[error("tool `{tool}`: {error}")]
    Schema {
        /// The tool's name.
        tool: String,
        /// The definition error.
        error: DefinitionError,
    },
    /// The tool opts into background runs but already declares `run_in_background`.
    #[error(
        "tool `{0}` runs in the background on request, so it cannot declare its own `run_in_background` argument"
    )]
    BackgroundArgument(String),
}

impl ToolBuilder {
    /// What the model reads about the tool. Default: empty.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = text.into();
        self
    }

    /// The arguments schema. Default: no declared arguments (an open object).
    pub fn parameters(mut self, schema: ParameterSchema) -> Self {
        self.parameters = schema;
        self
    }

    /// The canonical output schema. Default: `any`.
    pub fn output(mut self, schema: ValueSchema) -> Self {
        self.output = schema;
        self
    }

    /// The body of the tool: `|arguments, exec| async move { … }` returning the output,
    /// `Result<serde_json::Value, ToolError>`.
    pub fn execute<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Arguments, Exec) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        self.execute = Some(Arc::new(f));
        self
    }

    /// The body of the tool, as an [`Execute`] implementation.
    pub fn execute_with(mut self, body: impl Execute) -> Self {
        self.execute = Some(Arc::new(body));
        self
    }

    /// Renders a successful output for the model (`render(arguments, output) ->
    /// Vec<Content>`). Default: a string as itself, anything else as compact JSON.
    pub fn render(
        mut self,
        f: impl Fn(&Value, &Value) -> Vec<Content> + Send + Sync + 'static,
    ) -> Self {
        self.render = Some(Arc::new(f));
        self
    }

    /// Projects durable presentation metadata from a successful call
    /// (`presentation_meta(arguments, output) -> JSON`). Skipped for nested calls from
    /// `run_code`.
    pub fn presentation_meta(
        mut self,
        f: impl Fn(&Value, &Value) -> Option<Value> + Send + Sync + 'static,
    ) -> Self {
        self.presentation_meta = Some(Arc::new(f));
        self
    }

    /// The card a UI shows when the call starts (`present_call(arguments) -> CallCard`;
    /// pure: it receives only the arguments).
    pub fn present_call(mut self, f: impl Fn(&Value) -> CallCard + Send + Sync + 'static) -> Self {
        self.present_call = Some(Arc::new(f));
        self
    }

    /// The card a UI shows for the outcome (`present_result(arguments, outcome) ->
    /// ResultCard`; pure: it receives only the arguments and the outcome).
    pub fn present_result(
        mut self,
        f: impl Fn(&Value, &Outcome) -> ResultCard + Send + Sync + 'static,
    ) -> Self {
        self.present_result = Some(Arc::new(f));
        self
    }

    /// Skip argument validation: the tool validates its arguments itself.
    /// Default: validation on.
    pub fn validate_arguments(mut self, on: bool) -> Self {
        self.validate_arguments = on;
        self
    }

    /// Makes the model-facing description depend on the registry the tool is listed in:
    /// `f(description, registry)` gives the text [`Registry::schemas`](super::Registry::schemas)
    /// lists (`run_code` appends the declarations of the tools a program sees). The static
    /// description stays what [`Tool::description`] returns.
    pub fn describe_with(
        mut self,
        f: impl Fn(&str, &super::Registry) -> String + Send + Sync + 'static,
    ) -> Self {
        self.describe = Some(Arc::new(f));
        self
    }

    /// Who sees the tool. Default: [`Visibility::Visible`].
    pub fn visibility(mut self, visibility: Visibility) -> Self {
        self.visibility = visibility;
        self
    }

    /// Lets a call ask to run as a background job: the parameters gain an optional boolean
    /// `run_in_background` (in the schema and the declarations only then), and a call with
    /// `run_in_background: true` goes through the pipeline's policy as usual, then starts
    /// `execute` as a job of the caller's agent (the registry's [`Jobs`](super::jobs::Jobs))
    /// and answers at once with the handle `{"kind": "background", "job_id": "…"}`. The job
    /// runs with the arguments less `run_in_background`, under the job's own signal; its
    /// value is checked against the output schema when it ends. Off by default.
    pub fn run_in_background(mut self, on: bool) -> Self {
        self.run_in_background = on;
        self
    }

    /// What the tool does to the world (see [`ToolAnnotations`]). Default: no hints.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// Lists the tool in `run_code`'s description by name and summary only, as the index
    /// does past the token budget; programs read its declarations with `tools.$describe`
    /// (see [`crate::discovery`]). Calls are unchanged. Default: `false`. An MCP server's
    /// tools are deferred when their declarations pass the server's `tool_budget`.
    pub fn deferred(mut self, on: bool) -> Self {
        self.deferred = on;
        self
    }

    /// Checks the schemas and finishes the definition.
    ///
    /// # Errors
    /// [`BuildError::MissingExecute`] without `execute`; [`BuildError::Schema`] for a
    /// definition error in either schema; [`BuildError::BackgroundArgument`] when a tool
    /// that runs in the background declares `run_in_background` itself.
    pub fn build(self) -> Result<Tool, BuildError> {
        let Some(execute) = self.execute else {
            return Err(BuildError::MissingExecute(self.name));
        };
        let schema_err = |error| BuildError::Schema {
            tool: self.name.clone(),
            error,
        };
        let parameters = if self.run_in_background {
            self.parameters
                .with_property(
                    super::jobs::tools::RUN_IN_BACKGROUND,
                    Node::boolean().describe(
                        "Run as a background job: answers at once with {kind: \"background\", job_id}; read it with job_output.",
                    ),
                )
                .ok_or_else(|| BuildError::BackgroundArgument(self.name.clone()))?
        } else {
            self.parameters
        };
        parameters.check().map_err(schema_err)?;
        self.output.check().map_err(schema_err)?;
        Ok(Tool {
            inner: Arc::new(ToolInner {
                name: Arc::from(self.name.as_str()),
                description: self.description,
                parameters,
                output: self.output,
                execute,
                render: self.render,
                presentation_meta: self.presentation_meta,
                present_call: self.present_call,
                present_result: self.present_result,
                validate_arguments: self.validate_arguments,
                visibility: self.visibility,
                describe: self.describe,
                run_in_background: self.run_in_background,
                annotations: self.annotations,
                deferred: self.deferred,
            }),
        })
    }
}
