//! An MCP server for a [`Registry`]: `run_code` (whose description declares every tool a
//! program can call), `read_spill` (the full output of a cut run, in pages), and with
//! [`McpServerConfig::expose_tools`] every visible tool directly. `codemode mcp` is this
//! server over the command line's tools.
//!
//! ```no_run
//! # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
//! use codemode::mcp::server::{McpServer, McpServerConfig};
//! use codemode::{FileTools, Registry};
//!
//! let registry = Registry::new();
//! let _files = FileTools::new(std::path::Path::new("."))?.register(&registry)?;
//! let server = McpServer::new(registry, McpServerConfig::default())?;
//! server.serve_stdio().await?; // until the client closes standard input
//! # Ok(()) }
//! ```
//!
//! # What a client sees
//!
//! - `tools/list`: `run_code` with its parameters (`{"code", "timeout_ms"?}`) and
//!   [`run_code_output_schema`](crate::run_code::run_code_output_schema) as
//!   `outputSchema`; `read_spill`; with `expose_tools`, each tool of [`Registry::schemas`]
//!   with its `inputSchema` and, when its output is a JSON object, its `outputSchema` (MCP's
//!   `outputSchema` describes objects only before protocol revision 2026-07-28).
//! - `tools/call` of `run_code`: the text content is the run's capped model-facing text
//!   ([`render_text`]), `structuredContent` the canonical
//!   value, and `isError` is true when the program did not end ok. A direct tool answers
//!   with its rendered content, and its value as `structuredContent` when that is a JSON
//!   object. A call the pipeline refuses (arguments that fail the schema, a denial) is an
//!   `isError` result whose text is the reason; so is a call of a direct tool that fails.
//!   Only a name the server does not offer is a JSON-RPC error (`-32602`, invalid params,
//!   naming the tools offered).
//! - Each call is dispatched through [`Registry::dispatch`] with the MCP request's
//!   cancellation (`notifications/cancelled`, or the session ending) as its signal, and
//!   the session's own [`Agent`]: context tools inject for the conversation comes after
//!   the call's own content, one text block each.
//! - Requests run concurrently. Each `tools/call` runs on a thread of its own, with a
//!   current-thread Tokio runtime for the call and the nested calls its program makes (so
//!   no thread hop per nested call), each `run_code` in its own engine: a program in a CPU
//!   loop holds only its own thread, never the protocol or another call, and the system
//!   spreads the calls over the cores. The protocol itself runs on the caller's runtime.
//! - The server stops waiting for a call [`ABANDON_AFTER`] past its cancellation, or past
//!   the timeout of the run it started on its thread (`run_code` without a yield,
//!   `run_code_resume`): a program in a loop over a slow built-in that allocates nothing
//!   stops only at the engine's next check, which can be minutes away. The call is then
//!   answered (the run's `TimeoutError`; for a cancelled call, an error saying nothing
//!   waits for it) while its thread goes on to its end, still holding one of the session's
//!   calls (see [`McpServerConfig::max_calls_per_session`]). A run with a yield is a job,
//!   which ends the same way (see [`JobSpec`](crate::jobs::JobSpec)).
//!
//! # Sessions and spills
//!
//! A session is one stdio connection, or one `Mcp-Session-Id` over HTTP. The server
//! speaks the MCP revisions that have sessions (2024-11-05 to 2025-11-25): a spill
//! belongs to the session whose run wrote it, and `read_spill` reads only the spills of
//! the session asking. Spill files go to a private folder the server creates (see
//! [`McpServerConfig::run_code`]); a session's spills are removed when it ends, and the
//! folder when the last handle of the server is dropped (a server that was killed leaves
//! it: on Linux the next server started over the same folder removes it). A spill's id is
//! its file name, never a path: no other file can be read.

mod http;
mod spill;

use std::borrow::Cow;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

pub use self::http::{HttpOptions, HttpServer};
use self::spill::{FolderGuard, SessionSpills, SpillFolder};
use crate::hooks::ProgressSink;
use crate::run_code::{
    ABANDON_AFTER, OverdueArm, RUN_CODE, RUN_CODE_RESUME, RunCodeConfig, abandoned_value,
    render_text, run_code_resume_tool, run_code_tool,
};
use crate::{Agent, Content, Outcome, RegisterError, Registry, Request, ToolHandle, Visibility};

/// The name of the tool that reads spills back.
pub const READ_SPILL: &str = "read_spill";

/// How an [`McpServer`] serves.
///
/// Defaults ([`McpServerConfig::default`]): `run_code` [`RunCodeConfig::default`] with
/// `yield_after` [`DEFAULT_YIELD_AFTER`] (a run still going after 10 s answers
/// `status: "running"` and goes on as a background job of the session; spills on, under
/// the system's temporary folder); `expose_tools` false; `page_bytes`
/// `None` (pages of `run_code.output_cap` bytes); `max_calls_per_session` `None`
/// ([`DEFAULT_MAX_CALLS_PER_SESSION`]).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct McpServerConfig {
    /// How `run_code` runs programs: limits, output cap, calls listed, spills. With
    /// `spill` `None` nothing is spilled (a cut preview says the full output was not
    /// saved). Otherwise the server creates a private folder `mcp-<pid>-<random>` inside
    /// `spill.dir` (created if missing; mode 0700 on Unix) and writes spills there with
    /// `spill`'s retention, which the sessions share; `read_root` and `read_tool` are the
    /// server's own (none, `read_spill`).
    pub run_code: RunCodeConfig,
    /// Whether every visible tool of the registry is offered directly too, besides
    /// `run_code` and `read_spill`.
    pub expose_tools: bool,
    /// Most bytes one `read_spill` page holds; `None`: the output cap (characters take at
    /// least a byte each, so a page never shows more than the cap). At least 16.
    pub page_bytes: Option<usize>,
    /// Most `tools/call` requests of one session that run at once (each on a thread of
    /// its own, `run_code` in an engine of its own); later ones wait for a slot, and can
    /// be cancelled while they wait. `None`: [`DEFAULT_MAX_CALLS_PER_SESSION`]. At least 1.
    pub max_calls_per_session: Option<usize>,
    /// Whether a call that a policy asks about is put to the person behind the session's
    /// client as an MCP elicitation request (accept runs it; decline or cancel denies it),
    /// when the client can elicit. It replaces the registry's approver. A session whose
    /// client cannot elicit gets a paused run instead, which `run_code_resume` continues.
    /// Default true.
    pub elicit_approvals: bool,
}

/// Most calls of one session that run at once by default: 16.
pub const DEFAULT_MAX_CALLS_PER_SESSION: usize = 16;

/// `run_code`'s `yield_after` in a server by default: 10 000 ms, shorter than the request
/// timeouts of common MCP clients.
pub const DEFAULT_YIELD_AFTER: Duration = Duration::from_millis(10_000);

/// The job tools a server registers and offers to every session beside `run_code`: a
/// session follows and stops its own background runs with them.
pub const JOB_TOOLS: [&str; 3] = ["job_output", "job_kill", "job_list"];

impl Default for McpServerConfig {
    fn default() -> Self {
        McpServerConfig {
            run_code: RunCodeConfig::default().yield_after(Some(DEFAULT_YIELD_AFTER)),
            expose_tools: false,
            page_bytes: None,
            max_calls_per_session: None,
            elicit_approvals: true,
        }
    }
}

impl McpServerConfig {
    /// Sets how many calls of one session run at once (see
    /// [`McpServerConfig::max_calls_per_session`]).
    pub fn max_calls_per_session(mut self, calls: usize) -> Self {
        self.max_calls_per_session = Some(calls);
        self
    }

    /// Sets how `run_code` runs (see [`McpServerConfig::run_code`]).
    pub fn run_code(mut self, config: RunCodeConfig) -> Self {
        self.run_code = config;
        self
    }

    /// Sets [`McpServerConfig::elicit_approvals`].
    pub fn elicit_approvals(mut self, on: bool) -> Self {
        self.elicit_approvals = on;
        self
    }

    /// Sets whether the registry's tools are offered directly too.
    pub fn expose_tools(mut self, on: bool) -> Self {
        self.expose_tools = on;
        self
    }

    /// Sets the most bytes of a `read_spill` page.
    pub fn page_bytes(mut self, bytes: usize) -> Self {
        self.page_bytes = Some(bytes);
        self
    }
}

/// Why the server could not start or serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpServerError {
    /// The server's `run_code` could not be registered (the registry has one already).
    #[error("the MCP server registers its own run_code: {0}")]
    Register(#[from] RegisterError),
    /// The private spill folder could not be created.
    #[error("the spill folder could not be created in {dir}: {source}")]
    SpillFolder {
        /// The folder it was to be created in.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The HTTP address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// An allowed origin given to [`McpServer::bind_http`] is not an origin.
    #[error("the allowed origin {origin:?} is not an origin: {reason}")]
    Origin {
        /// The value given.
        origin: String,
        /// Why it is not an origin.
        reason: String,
    },
    /// The connection failed: the client's `initialize` never came, the transport broke.
    #[error("serving MCP failed: {0}")]
    Serve(String),
}

/// An MCP server over a [`Registry`]. Cheap to clone: clones share the registry, the
/// spill folder and `run_code`.
#[derive(Clone)]
pub struct McpServer {
    shared: Arc<Shared>,
    /// Removes the spill folder once every handle of the server is dropped (sessions
    /// still running then can no longer read their spills).
    _folder: Option<Arc<FolderGuard>>,
}

/// What every session of one server shares.
struct Shared {
    registry: Registry,
    expose_tools: bool,
    page_bytes: usize,
    max_calls: usize,
    /// Bytes of stack of the thread each call runs on ([`Limits::thread_stack`] of
    /// `run_code`'s limits).
    ///
    /// [`Limits::thread_stack`]: crate::run_code::Limits::thread_stack
    thread_stack: usize,
    _run_code: ToolHandle,
    _run_code_resume: ToolHandle,
    _job_tools: Vec<ToolHandle>,
    /// The sessions whose clients answer approvals (elicitation), when on.
    elicit: Option<Arc<ElicitApprovals>>,
    /// The private spill folder, `None` when spilling is off.
    spills: Option<SpillFolder>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("registry", &self.shared.registry)
            .field("expose_tools", &self.shared.expose_tools)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// A server for `registry`: registers `run_code` in it (for as long as the server
    /// lives) and creates the private spill folder.
    ///
    /// # Errors
    /// [`McpServerError::Register`] when the registry already has a tool named
    /// `run_code`; [`McpServerError::SpillFolder`] when the spill folder cannot be made.
    pub fn new(registry: Registry, config: McpServerConfig) -> Result<Self, McpServerError> {
        let page_bytes = config
            .page_bytes
            .unwrap_or(config.run_code.output_cap)
            .max(16);
        let (spills, guard, spill_config) = match &config.run_code.spill {
            None => (None, None, None),
            Some(spill) => {
                let (folder, guard) = SpillFolder::create(spill)?;
                let spill_config = folder.spill_config(spill);
                (Some(folder), Some(Arc::new(guard)), Some(spill_config))
            }
        };
        let thread_stack = config.run_code.limits.thread_stack();
        let run_code_config = config.run_code.spill(spill_config);
        let run_code = registry.register(run_code_tool(run_code_config.clone()))?;
        let run_code_resume = registry.register(run_code_resume_tool(run_code_config))?;
        let job_tools = crate::jobs::register_job_tools(&registry)?;
        let elicit = config.elicit_approvals.then(|| {
            let elicit = Arc::new(ElicitApprovals::default());
            registry.set_approver(Some(elicit.clone()));
            elicit
        });
        Ok(McpServer {
            shared: Arc::new(Shared {
                registry,
                expose_tools: config.expose_tools,
                page_bytes,
                thread_stack,
                max_calls: config
                    .max_calls_per_session
                    .unwrap_or(DEFAULT_MAX_CALLS_PER_SESSION)
                    .max(1),
                _run_code: run_code,
                _run_code_resume: run_code_resume,
                _job_tools: job_tools,
                elicit,
                spills,
            }),
            _folder: guard,
        })
    }

    /// The registry the server calls.
    pub fn registry(&self) -> &Registry {
        &self.shared.registry
    }

    /// Serves one session over standard input and output (newline-delimited JSON-RPC),
    /// until the client closes standard input. Nothing else may write to standard output
    /// meanwhile.
    ///
    /// # Errors
    /// [`McpServerError::Serve`] when the session cannot start (no `initialize`) or its
    /// task fails.
    pub async fn serve_stdio(&self) -> Result<(), McpServerError> {
        self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Serves one session over a byte stream pair (newline-delimited JSON-RPC), until
    /// `reader` ends.
    ///
    /// # Errors
    /// As [`McpServer::serve_stdio`].
    pub async fn serve_io<R, W>(&self, reader: R, writer: W) -> Result<(), McpServerError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let running = self
            .session()
            .serve((reader, writer))
            .await
            .map_err(|e| McpServerError::Serve(e.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|e| McpServerError::Serve(e.to_string()))?;
        Ok(())
    }

    /// A new session's handler.
    fn session(&self) -> Session {
        Session {
            shared: self.shared.clone(),
            agent: Agent::new(),
            spills: SessionSpills::default(),
            list_watch: std::sync::Mutex::new(None),
            calls: Arc::new(tokio::sync::Semaphore::new(self.shared.max_calls)),
        }
    }
}

/// One session: the server's handler of one client connection.
struct Session {
    shared: Arc<Shared>,
    /// The conversation this session's calls belong to.
    agent: Agent,
    /// The spills this session's runs wrote.
    spills: SessionSpills,
    /// The task that tells the client when the tools change, once it is initialized.
    list_watch: std::sync::Mutex<Option<tokio::task::AbortHandle>>,
    /// Slots for the calls that run at once ([`McpServerConfig::max_calls_per_session`]).
    calls: Arc<tokio::sync::Semaphore>,
}

/// How long a change of the tools waits for more before the client is told: 50 ms (an
/// upstream server's new list is many unregistrations and registrations).
const LIST_CHANGE_SETTLE: std::time::Duration = std::time::Duration::from_millis(50);

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(watch) = self
            .list_watch
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            watch.abort();
        }
        if let Some(elicit) = &self.shared.elicit {
            elicit.forget(&self.agent);
        }
        // Its jobs end with it, also those whose runs are stuck in their engines.
        self.shared.registry.jobs().end_owned(&self.agent);
        self.agent.dispose();
        if let Some(folder) = &self.shared.spills {
            self.spills.remove_all(folder);
        }
    }
}

/// The protocol revisions served: those with sessions (spills belong to a session).
const MAX_PROTOCOL: ProtocolVersion = ProtocolVersion::LATEST_WITH_INITIALIZE;

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("codemode", env!("CARGO_PKG_VERSION")))
        .with_protocol_version(MAX_PROTOCOL)
        .with_instructions(
            "Call run_code with a JavaScript or TypeScript program; inside it every tool is \
                 `await tools.<name>(args)` (its description declares them). When a run's output \
                 is cut, read the rest with read_spill. A run that pauses for approval \
                 (status \"paused\") continues with run_code_resume once the user decides.",
        )
    }

    /// From now on the client hears `notifications/tools/list_changed` when the registry's
    /// tools change: `run_code`'s description (its declarations) and, with
    /// `--expose-tools`, the list itself change with them (MCP, "Tools", list changed).
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let mut changes = self.shared.registry.watch_tools();
        changes.mark_unchanged();
        let peer = context.peer;
        if let Some(elicit) = &self.shared.elicit {
            let can_elicit = peer
                .peer_info()
                .is_some_and(|info| info.capabilities.elicitation.is_some());
            if can_elicit {
                elicit.add(&self.agent, peer.clone());
            }
        }
        let task = tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                tokio::time::sleep(LIST_CHANGE_SETTLE).await;
                changes.mark_unchanged();
                if peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
        let previous = self
            .list_watch
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .replace(task.abort_handle());
        if let Some(previous) = previous {
            previous.abort();
        }
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&MAX_PROTOCOL))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    /// The tool named `name`, for the HTTP transport's checks of a call's headers against
    /// its parameters (its description is the static one: no declarations are made).
    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        if name == READ_SPILL {
            return Some(spill::tool(self.shared.page_bytes));
        }
        if !self.offers(name) {
            return None;
        }
        let tool = self
            .shared
            .registry
            .tools()
            .into_iter()
            .find(|t| t.name() == name)?;
        Some(mcp_tool(tool.schema()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        if name == READ_SPILL {
            let result = spill::read(
                self.shared.spills.as_ref(),
                &self.spills,
                self.shared.page_bytes,
                &arguments,
            )
            .await;
            return Ok(match result {
                Ok(page) => page.into_result(),
                Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
            }
            .into());
        }
        if !self.offers(name) {
            return Err(ErrorData::invalid_params(self.unknown_tool(name), None));
        }
        // A slot first: a client cannot start threads and engines without bound.
        let slot = tokio::select! {
            slot = self.calls.clone().acquire_owned() => slot.ok(),
            () = context.ct.cancelled() => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(
                    "the call was cancelled while it waited for one of the session's calls to end",
                )])
                .into());
            }
        };
        let mut request =
            Request::new(name, arguments, context.ct.clone()).agent(self.agent.clone());
        let forward = context
            .meta
            .get_progress_token()
            .map(|token| ProgressForward::start(context.peer.clone(), token));
        if let Some(forward) = &forward {
            request = request.report_progress_to(forward.sink());
        }
        let call = self.shared.registry.dispatch(request);
        let outcome = on_own_thread(call, slot, self.shared.thread_stack, context.ct.clone()).await;
        if let Some(forward) = forward {
            // Every report made before the outcome goes out before the answer, none after.
            forward.finish().await;
        }
        let outcome = match outcome {
            Ok(OnThread::Done(outcome)) => outcome,
            Ok(OnThread::Abandoned(result)) => return Ok(result.into()),
            Err(e) => {
                let message = format!("the server could not start a thread for the call: {e}");
                return Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into());
            }
        };
        // A run's spill is the session's: from run_code, or from job_output once a
        // background run has finished.
        let run = match name {
            RUN_CODE | RUN_CODE_RESUME => outcome.value(),
            "job_output" | "job_kill" => outcome.value().and_then(|v| v.get("value")),
            _ => None,
        };
        if let Some(id) = run.and_then(|v| v.get("spill")?.get("id")?.as_str()) {
            self.spills.record(id);
        }
        Ok(self.result(name, outcome).into())
    }
}

/// The progress reports of one call (its tool's and, for `run_code`, those of the calls its
/// program makes, such as an upstream MCP server's), sent to the client as
/// `notifications/progress` with the token its request carried (MCP, "Progress"): numbered
/// 1, 2, 3… so that `progress` increases across tools with different scales, each with the
/// reporting tool and its own figures as `message` (`everything.longRunning 2/5 step 2`).
/// One task per call that asked for progress, not per report; reports that find
/// [`PROGRESS_QUEUE`] reports waiting for a slow client are dropped (progress is advice).
struct ProgressForward {
    reports: tokio::sync::mpsc::Sender<Forwarded>,
    task: tokio::task::JoinHandle<()>,
}

/// How many progress reports of one call may wait for the client: 256.
const PROGRESS_QUEUE: usize = 256;

enum Forwarded {
    Report(String),
    /// The call is over: stop after the reports before this one.
    Done,
}

impl ProgressForward {
    fn start(peer: rmcp::Peer<RoleServer>, token: ProgressToken) -> ProgressForward {
        let (reports, mut rx) = tokio::sync::mpsc::channel(PROGRESS_QUEUE);
        let task = tokio::spawn(async move {
            let mut sent = 0u32;
            while let Some(Forwarded::Report(message)) = rx.recv().await {
                sent += 1;
                let param = ProgressNotificationParam::new(token.clone(), f64::from(sent))
                    .with_message(message);
                if peer.notify_progress(param).await.is_err() {
                    break;
                }
            }
        });
        ProgressForward { reports, task }
    }

    fn sink(&self) -> ProgressSink {
        let reports = self.reports.clone();
        ProgressSink::new(move |exec, progress| {
            let _ = reports.try_send(Forwarded::Report(progress.describe(exec.name())));
        })
    }

    async fn finish(self) {
        let _ = self.reports.send(Forwarded::Done).await;
        let _ = self.task.await;
    }
}

impl Session {
    /// Whether `name` is a tool this session offers through the registry.
    fn offers(&self, name: &str) -> bool {
        if name == RUN_CODE || name == RUN_CODE_RESUME || JOB_TOOLS.contains(&name) {
            return true;
        }
        self.shared.expose_tools
            && self
                .shared
                .registry
                .tools()
                .iter()
                .any(|t| t.name() == name && t.visibility() != Visibility::Hidden)
    }

    /// The message for a call of a tool not offered.
    fn unknown_tool(&self, name: &str) -> String {
        let mut offered = vec![
            RUN_CODE.to_owned(),
            RUN_CODE_RESUME.to_owned(),
            READ_SPILL.to_owned(),
        ];
        offered.extend(JOB_TOOLS.iter().map(|n| (*n).to_owned()));
        if self.shared.expose_tools {
            offered.extend(
                self.shared
                    .registry
                    .tools()
                    .iter()
                    .filter(|t| t.visibility() != Visibility::Hidden)
                    .map(|t| t.name().to_owned())
                    .filter(|n| !is_own(n)),
            );
        }
        let inside = !self.shared.expose_tools
            && self
                .shared
                .registry
                .sandbox_tools()
                .iter()
                .any(|t| t.name() == name);
        if inside {
            format!(
                "tool `{name}` is not offered directly; call it from a run_code program as `await tools[{}](args)` (the tools offered: {})",
                Value::String(name.to_owned()),
                offered.join(", ")
            )
        } else {
            format!(
                "unknown tool `{name}`; the tools offered: {}",
                offered.join(", ")
            )
        }
    }

    /// The tools offered, as MCP lists them: `run_code`, `read_spill`, then (with
    /// `expose_tools`) the registry's other visible tools.
    fn tools(&self) -> Vec<rmcp::model::Tool> {
        let registry = &self.shared.registry;
        let mut tools = Vec::new();
        if let Some(run_code) = registry.tools().into_iter().find(|t| t.name() == RUN_CODE) {
            let mut schema = run_code.schema();
            schema.description = run_code.description_in(registry);
            tools.push(mcp_tool(schema));
        }
        tools.push(spill::tool(self.shared.page_bytes));
        let schemas = registry.schemas();
        tools.extend(
            schemas
                .iter()
                .filter(|s| s.name == RUN_CODE_RESUME || JOB_TOOLS.contains(&s.name.as_str()))
                .cloned()
                .map(mcp_tool),
        );
        if self.shared.expose_tools {
            tools.extend(
                schemas
                    .into_iter()
                    .filter(|s| !is_own(&s.name))
                    .map(mcp_tool),
            );
        }
        tools
    }

    /// The MCP result of a dispatched call of `name`, with the session's pending
    /// injections after its content.
    fn result(&self, name: &str, outcome: Outcome) -> CallToolResult {
        let mut content: Vec<ContentBlock> = outcome
            .content()
            .iter()
            .chain(outcome.context())
            .map(content_block)
            .collect();
        content.extend(
            self.agent
                .take_injections()
                .into_iter()
                .map(|i| content_block(&i.content)),
        );
        match outcome.into_result() {
            Ok(value) => {
                // A run that goes on as a job (its handle, or `status: "running"`) is no error.
                let failed = (name == RUN_CODE || name == RUN_CODE_RESUME)
                    && value.get("status") == Some(&Value::from("error"));
                let mut result = if failed {
                    CallToolResult::error(content)
                } else {
                    CallToolResult::success(content)
                };
                // MCP's structured content is an object before revision 2026-07-28; the
                // text content already holds any other value.
                if value.is_object() {
                    result.structured_content = Some(value);
                }
                result
            }
            Err(_) => CallToolResult::error(content),
        }
    }
}

/// The approver of a server: puts a call that needs approval to the person behind the
/// client of the call's session, as an elicitation request with an empty form (MCP,
/// "Elicitation"): `accept` runs the call, `decline` and `cancel` deny it. It answers only
/// for sessions whose clients declared the `elicitation` capability; for the others a run
/// pauses (see [`Approver::can_answer`](crate::hooks::Approver::can_answer)).
#[derive(Default)]
struct ElicitApprovals {
    sessions: std::sync::Mutex<Vec<(Agent, rmcp::Peer<RoleServer>)>>,
}

impl ElicitApprovals {
    fn add(&self, agent: &Agent, peer: rmcp::Peer<RoleServer>) {
        self.lock().push((agent.clone(), peer));
    }

    fn forget(&self, agent: &Agent) {
        self.lock().retain(|(a, _)| !a.same_as(agent));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(Agent, rmcp::Peer<RoleServer>)>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn peer_of(&self, agent: &Agent) -> Option<rmcp::Peer<RoleServer>> {
        self.lock()
            .iter()
            .find(|(a, _)| a.same_as(agent))
            .map(|(_, p)| p.clone())
    }
}

impl crate::hooks::Approver for ElicitApprovals {
    fn can_answer(&self, exec: &crate::Exec) -> bool {
        self.peer_of(exec.agent()).is_some()
    }

    fn approve(
        &self,
        exec: &crate::Exec,
        prompt: &str,
    ) -> futures::future::BoxFuture<'static, crate::hooks::Approval> {
        use crate::hooks::Approval;
        use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
        let peer = self.peer_of(exec.agent());
        let arguments = exec.arguments().to_string();
        let arguments = if arguments.chars().count() > 500 {
            let cut: String = arguments.chars().take(500).collect();
            format!("{cut}…")
        } else {
            arguments
        };
        let message = format!(
            "{prompt}\n\nThe program wants to call {} with {arguments}. Allow this call?",
            exec.name()
        );
        Box::pin(async move {
            let Some(peer) = peer else {
                return Approval::Denied("nobody could be asked to approve the call".into());
            };
            let schema = match ElicitationSchema::builder().build() {
                Ok(schema) => schema,
                Err(e) => return Approval::Denied(format!("the user could not be asked: {e}")),
            };
            let request = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message,
                requested_schema: schema,
            };
            match peer.create_elicitation(request).await {
                Ok(answer) => match answer.action {
                    ElicitationAction::Accept => Approval::Approved,
                    ElicitationAction::Decline => {
                        Approval::Denied("the user declined the call".into())
                    }
                    _ => Approval::Denied("the user cancelled the call".into()),
                },
                Err(e) => Approval::Denied(format!("the user could not be asked: {e}")),
            }
        })
    }
}

/// How a call run on a thread of its own ended for its caller.
enum OnThread<T> {
    /// The call's output.
    Done(T),
    /// The caller stopped waiting: the result to answer with.
    Abandoned(CallToolResult),
}

/// Runs `call` to its end on a new thread of `stack` bytes with a current-thread runtime of
/// its own, and waits for it there: a call that holds its thread (a program in a CPU loop
/// until its timeout or cancellation) holds no thread of the caller's runtime. It stops
/// waiting [`ABANDON_AFTER`] past `cancelled`, or past the timeout of a run the call
/// started; `keep` (the session's slot) is held until the call ends all the same.
///
/// # Errors
/// When the thread or its runtime cannot be started.
async fn on_own_thread<F, K>(
    call: F,
    keep: K,
    stack: usize,
    cancelled: tokio_util::sync::CancellationToken,
) -> std::io::Result<OnThread<F::Output>>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
    K: Send + 'static,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (done, output) = tokio::sync::oneshot::channel();
    let (overdue_tx, overdue) = tokio::sync::oneshot::channel();
    let overdue_tx = std::sync::Mutex::new(Some(overdue_tx));
    let arm = OverdueArm::new(move |timeout| {
        let tx = overdue_tx.lock().ok().and_then(|mut tx| tx.take());
        if let Some(tx) = tx {
            let _ = tx.send(timeout);
        }
    });
    let processes = arm.processes();
    std::thread::Builder::new()
        .name("codemode-call".into())
        .stack_size(stack)
        .spawn(move || {
            let armed = arm.arm();
            let _ = done.send(runtime.block_on(call));
            drop(armed);
            drop(keep);
            // A file read still blocked in the kernel (a cancelled read of a file that
            // never ends) must not keep the thread.
            runtime.shutdown_background();
        })?;
    tokio::select! {
        biased;
        output = output => output
            .map(OnThread::Done)
            .map_err(|_| std::io::Error::other("the call's thread ended without an answer")),
        message = give_up(cancelled, overdue) => {
            // The run goes on in its thread; what its calls started ends now.
            processes.kill();
            Ok(OnThread::Abandoned(message))
        }
    }
}

/// Resolves, with the result to answer with, when the server stops waiting for a call:
/// [`ABANDON_AFTER`] past its cancellation, or when the run it started is overdue (the
/// timeout `overdue` brings): that run's [`abandoned_value`].
async fn give_up(
    cancelled: tokio_util::sync::CancellationToken,
    overdue: tokio::sync::oneshot::Receiver<Duration>,
) -> CallToolResult {
    let after_cancel = async {
        cancelled.cancelled().await;
        tokio::time::sleep(ABANDON_AFTER).await;
        CallToolResult::error(vec![ContentBlock::text(format!(
            "the call was cancelled and had not ended {} s later; nothing waits for it any more",
            ABANDON_AFTER.as_secs()
        ))])
    };
    let after_timeout = async {
        match overdue.await {
            Ok(timeout) => {
                let value = abandoned_value(timeout);
                let mut result =
                    CallToolResult::error(vec![ContentBlock::text(render_text(&value))]);
                result.structured_content = Some(value);
                result
            }
            // The call ended (its thread dropped the arm): the output comes first.
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        message = after_cancel => message,
        message = after_timeout => message,
    }
}

/// Whether `name` is one of the tools the server itself offers (listed first).
fn is_own(name: &str) -> bool {
    name == RUN_CODE || name == RUN_CODE_RESUME || name == READ_SPILL || JOB_TOOLS.contains(&name)
}

/// A tool's projection as MCP lists it. Its parameters schema is always an object; an
/// output schema that is not one (`true`, any JSON) is left out.
fn mcp_tool(schema: crate::ToolSchema) -> rmcp::model::Tool {
    let input = match schema.input_schema {
        Value::Object(o) => o,
        _ => JsonObject::from_iter([("type".to_owned(), Value::from("object"))]),
    };
    let mut tool = rmcp::model::Tool::new(schema.name, schema.description, Arc::new(input));
    if !schema.annotations.is_empty()
        && let Ok(annotations) = serde_json::to_value(&schema.annotations)
            .and_then(serde_json::from_value::<rmcp::model::ToolAnnotations>)
    {
        tool = tool.with_annotations(annotations);
    }
    match schema.output_schema {
        Value::Object(mut o) => {
            // MCP wants `"type": "object"` at an output schema's root; a union of objects
            // (`run_code`'s value, handle or running answer) says so once more.
            if !o.contains_key("type") && union_of_objects(&o) {
                o.insert("type".to_owned(), Value::from("object"));
            }
            tool.with_raw_output_schema(Arc::new(o))
        }
        _ => tool,
    }
}

/// Whether `schema` is a `oneOf`/`anyOf` whose every branch is `"type": "object"`.
fn union_of_objects(schema: &JsonObject) -> bool {
    ["oneOf", "anyOf"].iter().any(|k| {
        schema
            .get(*k)
            .and_then(Value::as_array)
            .is_some_and(|branches| {
                !branches.is_empty()
                    && branches
                        .iter()
                        .all(|b| b.get("type").and_then(Value::as_str) == Some("object"))
            })
    })
}

/// One piece of content as an MCP content block.
fn content_block(content: &Content) -> ContentBlock {
    match content {
        Content::Text { text } => ContentBlock::text(text.clone()),
        Content::Image { data, mime_type } => ContentBlock::image(data.clone(), mime_type.clone()),
    }
}
