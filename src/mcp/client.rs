//! A connection to one upstream MCP server, whose tools it registers as ordinary tools.
//!
//! - **Start**: a stdio server is started by [`crate::child::command`] (its own process
//!   group, a cleared environment, stderr kept); an HTTP server is reached over rmcp's
//!   streamable HTTP client. Starting, `initialize` and the first `tools/list` (every page)
//!   must end within the server's `startup_timeout`.
//! - **Tools**: each listed tool becomes `NAME.tool` with its `inputSchema` and
//!   `outputSchema` imported; a tool whose schema cannot be imported, or whose name cannot
//!   be registered, is skipped and said in [`Connection::warnings`].
//! - **Calls**: the arguments go as they are; the result becomes a value as
//!   [`super::content`] says. A call cancelled by its signal, dropped, or past the server's
//!   `call_timeout` sends `notifications/cancelled` for its request. Progress notifications
//!   for a call reach the registry's observers ([`crate::hooks::Observer::progress`]).
//! - **Changes**: `notifications/tools/list_changed` re-lists the tools and swaps them in
//!   the registry (the old handles disposed, the new tools registered), so a host sees the
//!   new set on its next run.
//! - **End**: dropping the [`Connection`] unregisters its tools, stops its tasks and kills
//!   the server's process group; no process is left behind.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientCapabilities,
    ClientConfig, ClientRequest, ContentBlock, Implementation, ProgressNotificationParam,
    ProgressToken, RequestId, ServerResult,
};
use rmcp::service::{NotificationContext, Peer, PeerRequestOptions, RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceError, ServiceExt};
use serde_json::Value;
use tokio::sync::Notify;

use super::config::{ServerConfig, Transport};
use super::content::result_value;
use super::stdio::{Answer, BOM, Link, StdioTransport};
use crate::child::{Group, Tail, describe_exit, drain};
use crate::dispatch::registry::WeakRegistry;
use crate::dispatch::{ErrorKind, Exec, Progress, Registry, Tool, ToolError, ToolHandle};
use crate::schema::{ImportWarning, ParameterSchema, ValueSchema};

/// A server that could not be used: its name, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("MCP server {server:?}: {message}")]
pub struct ConnectError {
    /// The server's name.
    pub server: String,
    /// What went wrong, with the end of its stderr when it has one.
    pub message: String,
}

/// A live connection to one upstream MCP server, with its tools registered.
///
/// Dropping it unregisters the tools, closes the connection and kills a stdio server's
/// process group.
pub struct Connection {
    conn: Arc<Conn>,
    relist: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("server", &self.conn.config.name)
            .finish_non_exhaustive()
    }
}

struct Conn {
    config: ServerConfig,
    peer: Peer<RoleClient>,
    /// Kept so the connection lives; dropped (cancelled) with the connection.
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    process: Mutex<Option<Process>>,
    stderr: Arc<Mutex<Tail>>,
    noise: Arc<Mutex<Noise>>,
    progress: Progresses,
    /// How a stdio server's calls are written and answered.
    link: Option<Link>,
    /// The runtime the connection's tasks run on, where a call's cancellation is sent
    /// from: the call may end on another (a background run's, shutting down) or on a
    /// thread with none (a sandbox torn down elsewhere).
    runtime: tokio::runtime::Handle,
    registry: WeakRegistry,
    handles: Mutex<Vec<ToolHandle>>,
    warnings: Mutex<Vec<String>>,
    import_warnings: Mutex<Vec<(String, ImportWarning)>>,
}

/// A stdio server's process: killed with its group when dropped. One task per server
/// waits for it to exit, so its exit status is known as soon as it ends.
struct Process {
    group: Group,
    exit: tokio::sync::watch::Receiver<Option<std::process::ExitStatus>>,
    waiter: tokio::task::JoinHandle<()>,
}

/// How long a server that closed its connection is given to exit, for its status in the
/// message: 300 ms.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_millis(300);

impl Process {
    /// Waits for `child` to exit; [`EXIT_GRACE`] after it does, `link` ends: the calls it
    /// still waits for fail then, even when a process the server started keeps its stdout
    /// open (what the server wrote before it exited is read by then).
    fn start(mut child: tokio::process::Child, group: Group, link: Link) -> Process {
        let (tx, exit) = tokio::sync::watch::channel(None);
        let waiter = tokio::spawn(async move {
            let status = child.wait().await.ok();
            let _ = tx.send(status);
            tokio::time::sleep(EXIT_GRACE).await;
            link.end();
        });
        Process {
            group,
            exit,
            waiter,
        }
    }
}

/// The exit status of a process that has exited, waiting up to [`EXIT_GRACE`] for it.
async fn exit_status(
    exit: tokio::sync::watch::Receiver<Option<std::process::ExitStatus>>,
) -> Option<std::process::ExitStatus> {
    exit_within(exit, EXIT_GRACE).await
}

/// The exit status of a process, once it exits within `limit`.
async fn exit_within(
    mut exit: tokio::sync::watch::Receiver<Option<std::process::ExitStatus>>,
    limit: std::time::Duration,
) -> Option<std::process::ExitStatus> {
    let status = tokio::time::timeout(limit, exit.wait_for(Option::is_some)).await;
    status.ok()?.ok().and_then(|s| *s)
}

impl Drop for Process {
    fn drop(&mut self) {
        self.group.kill();
        // The child is dropped with its waiter: tokio reaps it (`kill_on_drop`).
        self.waiter.abort();
    }
}

/// The calls in flight that may get progress reports, by their progress token.
type Progresses = Arc<Mutex<ProgressTable>>;

/// Reports kept for a token no call has registered yet: a fast server can report before
/// the call that sent the request has registered its token. At most 16 per token and 64
/// tokens (past that, the oldest token's go: reports that came after their call ended).
const EARLY_REPORTS: usize = 16;
const EARLY_TOKENS: usize = 64;

#[derive(Default)]
struct ProgressTable {
    calls: HashMap<ProgressToken, Reporting, crate::value::FxBuild>,
    early: std::collections::BTreeMap<String, (ProgressToken, Vec<Progress>)>,
}

impl ProgressTable {
    /// The order of tokens: rmcp numbers them in sequence, so older ones sort first.
    fn key(token: &ProgressToken) -> String {
        match &token.0 {
            rmcp::model::NumberOrString::Number(n) => format!("n{n:020}"),
            // This client's own ("c0", "c1", …): shorter first, so in sequence too.
            rmcp::model::NumberOrString::String(s) => format!("s{:010}{s}", s.len()),
        }
    }

    /// Registers the call of `token`; the reports that came before it, to deliver.
    fn register(&mut self, token: ProgressToken, exec: Exec) -> Vec<Progress> {
        // Most calls have no early reports: no key to build then.
        let early = if self.early.is_empty() {
            Vec::new()
        } else {
            self.early
                .remove(&Self::key(&token))
                .map(|(_, reports)| reports)
                .unwrap_or_default()
        };
        self.calls.insert(
            token,
            Reporting {
                exec,
                last: early.last().map(|p| p.progress),
            },
        );
        early
    }

    /// The call to tell about `progress`, or `None` (stale, or kept until its call comes).
    fn report(&mut self, token: &ProgressToken, progress: &Progress) -> Option<Exec> {
        match self.calls.get_mut(token) {
            Some(r) => {
                // rmcp handles each notification on a task of its own, so two reports of
                // one call can arrive out of order: one that does not increase the call's
                // progress (MCP, "Progress": it increases with each notification) is
                // stale, and dropped.
                if r.last.is_some_and(|last| progress.progress <= last) {
                    return None;
                }
                r.last = Some(progress.progress);
                Some(r.exec.clone())
            }
            // A stdio call's token is registered before its request is written.
            None if super::stdio::is_own_token(token) => None,
            None => {
                let key = Self::key(token);
                if !self.early.contains_key(&key) && self.early.len() >= EARLY_TOKENS {
                    self.early.pop_first();
                }
                let (_, reports) = self
                    .early
                    .entry(key)
                    .or_insert_with(|| (token.clone(), Vec::new()));
                if reports.len() < EARLY_REPORTS
                    && reports
                        .last()
                        .is_none_or(|p| progress.progress > p.progress)
                {
                    reports.push(progress.clone());
                }
                None
            }
        }
    }
}

/// A call that may get progress reports, and the last progress it reported.
struct Reporting {
    exec: Exec,
    last: Option<f64>,
}

/// Lines a stdio server printed on stdout that cannot be MCP messages (a message is a JSON
/// object or array on one line): how many, and the start of the first.
#[derive(Default)]
struct Noise {
    lines: usize,
    first: Vec<u8>,
    /// A message longer than [`MAX_MESSAGE_BYTES`] ended the connection.
    oversize: bool,
    /// A message nested deeper than [`MAX_MESSAGE_DEPTH`] ended the connection.
    too_deep: bool,
    /// Lines that looked like messages but could not be read as one (not valid JSON, or
    /// not a JSON-RPC message): how many, the start of the first, and why it failed.
    unreadable: usize,
    unreadable_first: Vec<u8>,
    unreadable_why: String,
}

/// The deepest nesting of arrays and objects a stdio server's message may have: 127 levels,
/// the message itself being the first, the most `serde_json` (which rmcp reads with)
/// accepts. A deeper message ends the connection with an error that says so, rather than
/// being dropped silently while its call waits for its timeout.
pub const MAX_MESSAGE_DEPTH: usize = 127;

/// The longest message a stdio server may send: 64 MiB (as a manifest command's stdout).
/// A longer line ends the connection with an error that says so, rather than being
/// dropped silently while its call waits for its timeout.
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// Bytes of the first stray stdout line an error message quotes.
const NOISE_SHOWN: usize = 200;

impl Noise {
    /// Notes a line that looked like a message but could not be read (`why`).
    fn unreadable(&mut self, line: &[u8], why: &str) {
        self.unreadable += 1;
        if self.unreadable == 1 {
            self.unreadable_first = line[..line.len().min(NOISE_SHOWN)].to_vec();
            self.unreadable_why = why.to_owned();
        }
    }

    /// `; it printed 2 lines on stdout that are not MCP messages, the first: "garbage"`.
    fn suffix(&self) -> String {
        let mut out = String::new();
        if self.oversize {
            out.push_str(&format!(
                "; it sent a message longer than {MAX_MESSAGE_BYTES} bytes (the limit), which ended the connection"
            ));
        }
        if self.too_deep {
            out.push_str(&format!(
                "; it sent a message nested deeper than {MAX_MESSAGE_DEPTH} levels (the limit), which ended the connection"
            ));
        }
        // "1 line", "is" or "2 lines", "are", and the start of the first, quoted.
        let lines = |n: usize, first: &[u8]| {
            let (lines, are) = if n == 1 {
                ("line", "is")
            } else {
                ("lines", "are")
            };
            let first = String::from_utf8_lossy(first);
            (
                format!("{n} {lines}"),
                are,
                format!("{:?}", first.trim_end()),
            )
        };
        if self.unreadable > 0 {
            let (lines, are, first) = lines(self.unreadable, &self.unreadable_first);
            out.push_str(&format!(
                "; it sent {lines} that {are} no MCP message it can read ({}), the first: {first}",
                self.unreadable_why
            ));
        }
        if self.lines > 0 {
            let (lines, are, first) = lines(self.lines, &self.first);
            out.push_str(&format!(
                "; it printed {lines} on stdout that {are} not MCP messages, the first: {first}"
            ));
        }
        out
    }
}

/// A stdio server's stdout as rmcp reads it, watched on the way for lines that are not
/// messages (rmcp skips them silently): no copy, one pass over the bytes read.
struct Watched<R> {
    inner: R,
    noise: Arc<Mutex<Noise>>,
    at_line_start: bool,
    /// Bytes of a byte-order mark read at the start of the line (rmcp drops one there),
    /// while it may still be one.
    bom: usize,
    in_noise: bool,
    line_bytes: usize,
    /// Where the message being read is: its nesting, and whether inside a string (and
    /// just after a backslash there).
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Watched<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if polled.is_ready() {
            // Line by line through what was read: one look per line start, one lock per
            // stretch of a stray line, never per byte.
            let mut rest = &buf.filled()[before..];
            while !rest.is_empty() {
                let newline = rest.iter().position(|&b| b == b'\n');
                let part = &rest[..newline.unwrap_or(rest.len())];
                if !self.watch(part) {
                    return std::task::Poll::Ready(Err(std::io::Error::other(
                        "an MCP message past the limits",
                    )));
                }
                match newline {
                    Some(i) => {
                        self.line_bytes = 0;
                        self.at_line_start = true;
                        self.bom = 0;
                        self.in_noise = false;
                        self.depth = 0;
                        self.in_string = false;
                        self.escaped = false;
                        rest = &rest[i + 1..];
                    }
                    None => rest = &[],
                }
            }
        }
        polled
    }
}

impl<R> Watched<R> {
    /// `inner` watched from its first byte, noting stray lines in `noise`.
    fn new(inner: R, noise: Arc<Mutex<Noise>>) -> Self {
        Watched {
            inner,
            noise,
            at_line_start: true,
            bom: 0,
            in_noise: false,
            line_bytes: 0,
            depth: 0,
            in_string: false,
            escaped: false,
        }
    }

    /// Follows the nesting of a message through `part`; `false` past
    /// [`MAX_MESSAGE_DEPTH`].
    fn nest(&mut self, part: &[u8]) -> bool {
        for &b in part {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => {
                    self.depth += 1;
                    if self.depth > MAX_MESSAGE_DEPTH {
                        lock(&self.noise).too_deep = true;
                        return false;
                    }
                }
                b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                _ => {}
            }
        }
        true
    }

    /// Notes `part`, a piece of one line; `false` when the line is past a limit.
    fn watch(&mut self, part: &[u8]) -> bool {
        self.line_bytes += part.len();
        if self.line_bytes > MAX_MESSAGE_BYTES {
            lock(&self.noise).oversize = true;
            return false;
        }
        let stray = if self.at_line_start {
            // A byte-order mark may open the line, even split across reads.
            let mut part = part;
            while self.bom < BOM.len() && part.first() == Some(&BOM[self.bom]) {
                self.bom += 1;
                part = &part[1..];
            }
            if part.is_empty() {
                return true;
            }
            // Only at the very start: once anything else is read, no mark follows.
            self.bom = BOM.len();
            match part.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\r')) {
                None => return true,
                Some(i) => {
                    self.at_line_start = false;
                    if matches!(part[i], b'{' | b'[') {
                        return self.nest(&part[i..]);
                    }
                    self.in_noise = true;
                    lock(&self.noise).lines += 1;
                    &part[i..]
                }
            }
        } else if self.in_noise {
            part
        } else {
            return self.nest(part);
        };
        if !stray.is_empty() {
            let mut noise = lock(&self.noise);
            if noise.lines == 1 && noise.first.len() < NOISE_SHOWN {
                let room = NOISE_SHOWN - noise.first.len();
                noise
                    .first
                    .extend_from_slice(&stray[..stray.len().min(room)]);
            }
        }
        true
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What rmcp calls on the client side: progress and list changes.
struct Handler {
    progress: Progresses,
    list_changed: Arc<Notify>,
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let progress = Progress {
            progress: params.progress,
            total: params.total,
            message: params.message,
        };
        let exec = lock(&self.progress).report(&params.progress_token, &progress);
        if let Some(exec) = exec {
            exec.progress(progress);
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.notify_one();
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("codemode", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// Connects to every server at once and registers their tools in `registry`: one result
/// per server, in the order given. A server that fails does not stop the others.
///
/// # Errors
/// Per server, as [`Connection::connect`]; two servers with the same name: the second
/// fails.
pub async fn connect_all(
    configs: Vec<ServerConfig>,
    registry: &Registry,
) -> Vec<Result<Connection, ConnectError>> {
    let mut seen = std::collections::HashSet::new();
    let attempts = configs.into_iter().map(|config| {
        let duplicate = !seen.insert(config.name.clone());
        async move {
            if duplicate {
                return Err(ConnectError {
                    message: "another server has this name; give each server its own".into(),
                    server: config.name,
                });
            }
            Connection::start(config, registry).await
        }
    });
    // Started together; registered in the order given, so which of two colliding names
    // wins does not depend on which server answered first.
    futures::future::join_all(attempts)
        .await
        .into_iter()
        .map(|started| started.map(|s| s.register(registry)))
        .collect()
}

impl Connection {
    /// Starts or reaches the server, initializes the session, lists its tools (every page)
    /// and registers them in `registry` as `NAME.tool`.
    ///
    /// # Errors
    /// A [`ConnectError`] naming the server when it cannot be started, exits or closes the
    /// connection during start-up (with the end of its stderr), does not answer within
    /// its `startup_timeout`, or answers `initialize` or `tools/list` with an error. Nothing
    /// is left running or registered then.
    pub async fn connect(
        config: ServerConfig,
        registry: &Registry,
    ) -> Result<Connection, ConnectError> {
        Ok(Connection::start(config, registry)
            .await?
            .register(registry))
    }

    async fn start(config: ServerConfig, registry: &Registry) -> Result<Started, ConnectError> {
        let server = config.name.clone();
        let fail = |message: String| ConnectError {
            server: server.clone(),
            message,
        };
        super::config::check_server_name(&config.name).map_err(fail)?;
        let progress: Progresses = Arc::default();
        let list_changed = Arc::new(Notify::new());
        let handler = Handler {
            progress: progress.clone(),
            list_changed: list_changed.clone(),
        };
        let stderr = Arc::new(Mutex::new(Tail::default()));
        let noise = Arc::new(Mutex::new(Noise::default()));
        let limit = config.startup_timeout;
        let mut process = None;
        let mut stderr_reader = None;
        let mut link = None;
        let started = match &config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let dir = match cwd {
                    Some(dir) if !dir.is_dir() => {
                        return Err(fail(format!(
                            "its folder (cwd) {} is not a folder that exists",
                            dir.display()
                        )));
                    }
                    Some(dir) => dir.clone(),
                    None => std::env::current_dir()
                        .map_err(|e| fail(format!("the current folder cannot be read: {e}")))?,
                };
                let mut cmd = crate::child::command(command, args, &dir, env);
                let mut child = cmd
                    .spawn()
                    .map_err(|e| fail(format!("could not start `{command}`: {e}")))?;
                let group = Group::shared(&child);
                let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                    return Err(fail("its stdin or stdout could not be opened".into()));
                };
                if let Some(pipe) = child.stderr.take() {
                    let tail = stderr.clone();
                    // One reader per server for its whole life, not per call.
                    stderr_reader = Some(tokio::spawn(drain(pipe, move |chunk| {
                        lock(&tail).push(chunk);
                        true
                    })));
                }
                let writer = Link::new(stdin);
                process = Some(Process::start(child, group, writer.clone()));
                let stdout = Watched::new(stdout, noise.clone());
                link = Some(writer.clone());
                let noted = noise.clone();
                let transport = StdioTransport::new(stdout, writer, move |line, why| {
                    lock(&noted).unreadable(line, why);
                });
                tokio::time::timeout(limit, handler.serve(transport))
                    .await
                    .map(|r| r.map_err(|e| root_cause(&e)))
            }
            Transport::Http { url, headers } => {
                let transport = http_transport(url, headers).map_err(fail)?;
                tokio::time::timeout(limit, handler.serve(transport))
                    .await
                    .map(|r| r.map_err(|e| root_cause(&e)))
            }
        };
        let service = match started {
            Ok(Ok(service)) => service,
            failed => {
                // A server that is exiting: give it a moment to be reaped, and its stderr to
                // be read to the end, for the message.
                let mut exit = None;
                if let Some(p) = process.as_ref() {
                    exit = match failed {
                        Ok(Err(_)) => exit_status(p.exit.clone()).await,
                        _ => *p.exit.borrow(),
                    };
                    if exit.is_some()
                        && let Some(reader) = stderr_reader.take()
                    {
                        let _ = tokio::time::timeout(EXIT_GRACE, reader).await;
                    }
                }
                let what = match (failed, exit) {
                    (_, Some(status)) => {
                        format!("the server {} during start-up", exited(&status))
                    }
                    (Ok(Err(e)), None) => format!("start-up failed: {e}"),
                    (_, None) => format!(
                        "did not answer `initialize` within its start-up limit of {} ms",
                        limit.as_millis()
                    ),
                };
                return Err(fail(format!(
                    "{what}{}{}",
                    lock(&noise).suffix(),
                    lock(&stderr).suffix()
                )));
            }
        };
        let conn = Arc::new(Conn {
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            process: Mutex::new(process),
            stderr,
            noise,
            progress,
            link,
            runtime: tokio::runtime::Handle::current(),
            registry: registry.downgrade(),
            handles: Mutex::new(Vec::new()),
            warnings: Mutex::new(Vec::new()),
            import_warnings: Mutex::new(Vec::new()),
            config,
        });
        let listed = tokio::time::timeout(limit, conn.peer.list_all_tools()).await;
        let tools = match listed {
            Ok(Ok(tools)) => tools,
            Ok(Err(e)) => {
                return Err(fail(
                    conn.failure(&format!("`tools/list` failed: {}", error_text(&e))),
                ));
            }
            Err(_) => {
                return Err(fail(conn.failure(&format!(
                    "did not answer `tools/list` within its start-up limit of {} ms",
                    limit.as_millis()
                ))));
            }
        };
        Ok(Started {
            conn,
            tools,
            list_changed,
        })
    }
}

/// A server that answered `initialize` and `tools/list`, its tools not yet registered.
struct Started {
    conn: Arc<Conn>,
    tools: Vec<rmcp::model::Tool>,
    list_changed: Arc<Notify>,
}

impl Started {
    /// Registers the tools and starts following `list_changed`.
    fn register(self, registry: &Registry) -> Connection {
        let Started {
            conn,
            tools,
            list_changed,
        } = self;
        conn.install(registry, &tools);
        let relist = {
            let conn = Arc::downgrade(&conn);
            tokio::spawn(async move {
                loop {
                    list_changed.notified().await;
                    let Some(conn) = conn.upgrade() else { return };
                    conn.relist().await;
                }
            })
        };
        Connection { conn, relist }
    }
}

impl Connection {
    /// The server's name.
    pub fn name(&self) -> &str {
        &self.conn.config.name
    }

    /// The names of its registered tools (`NAME.tool`), in the server's order.
    pub fn tools(&self) -> Vec<String> {
        lock(&self.conn.handles)
            .iter()
            .map(|h| h.name().to_owned())
            .collect()
    }

    /// Tools of the last listing that were skipped, one sentence each (a schema that
    /// cannot be imported, a name that cannot be registered).
    pub fn warnings(&self) -> Vec<String> {
        lock(&self.conn.warnings).clone()
    }

    /// What the import of the last listing's schemas kept for display only (not enforced),
    /// as `(tool name, warning)` (`NAME.tool`, `input_schema.properties.x.x-widget: …`):
    /// for the host to log (issue 15, item 3).
    pub fn import_warnings(&self) -> Vec<(String, ImportWarning)> {
        lock(&self.conn.import_warnings).clone()
    }

    /// The end of what the server wrote on stderr (at most 2 000 bytes), for diagnostics.
    pub fn stderr(&self) -> String {
        lock(&self.conn.stderr)
            .suffix()
            .trim_start_matches("; ")
            .to_owned()
    }

    /// Lists the tools again and swaps them in the registry, as a
    /// `notifications/tools/list_changed` does.
    pub async fn refresh(&self) {
        self.conn.relist().await;
    }
}

/// How long [`Connection::close`] waits for a stdio server to exit once its input is
/// closed, and again after SIGTERM: 1 s each.
pub const CLOSE_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

impl Connection {
    /// Ends the session the way the MCP specification's stdio shutdown asks (lifecycle,
    /// "Shutdown"): the tools are unregistered, the server's input is closed, then the
    /// server gets [`CLOSE_GRACE`] to exit, then SIGTERM and another [`CLOSE_GRACE`], then
    /// its process group is killed. An HTTP session is closed at once. Dropping a
    /// `Connection` instead kills the server's group at once.
    ///
    /// Returns the server's exit status, when it exited by itself or on SIGTERM.
    pub async fn close(self) -> Option<std::process::ExitStatus> {
        self.relist.abort();
        for handle in lock(&self.conn.handles).drain(..) {
            handle.dispose();
        }
        let service = lock(&self.conn.service).take();
        if let Some(mut service) = service {
            // The transport (and with it the server's stdin) closes as the service ends.
            let _ = service.close_with_timeout(CLOSE_GRACE).await;
        }
        let process = lock(&self.conn.process).take()?;
        if let Some(status) = exit_within(process.exit.clone(), CLOSE_GRACE).await {
            return Some(status);
        }
        process.group.terminate();
        exit_within(process.exit.clone(), CLOSE_GRACE).await
        // `process` is dropped here: its group is killed.
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.relist.abort();
        for handle in lock(&self.conn.handles).drain(..) {
            handle.dispose();
        }
        drop(lock(&self.conn.service).take());
        drop(lock(&self.conn.process).take());
    }
}

/// rmcp's streamable HTTP client for `url` with `headers` on every request.
fn http_transport(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<rmcp::transport::StreamableHttpClientTransport<reqwest::Client>, String> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let mut map = HashMap::new();
    let mut auth = None;
    for (k, v) in headers {
        if k.eq_ignore_ascii_case("authorization") {
            // rmcp sends it itself, as a bearer token.
            auth = Some(v.strip_prefix("Bearer ").unwrap_or(v).to_owned());
            continue;
        }
        let name =
            http::HeaderName::from_bytes(k.as_bytes()).map_err(|e| format!("header {k:?}: {e}"))?;
        let value = http::HeaderValue::from_str(v).map_err(|e| format!("header {k:?}: {e}"))?;
        map.insert(name, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(map);
    if let Some(token) = auth {
        config = config.auth_header(token);
    }
    Ok(rmcp::transport::StreamableHttpClientTransport::from_config(
        config,
    ))
}

/// `exited with status 3`, `was killed by signal 9 (SIGKILL)`.
fn exited(status: &std::process::ExitStatus) -> String {
    let text = describe_exit(status);
    if text.starts_with("killed") {
        format!("was {text}")
    } else {
        text
    }
}

/// The innermost cause of an error (`Connection refused (os error 111)`), not the chain of
/// transport types above it.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// The message of an rmcp error, without its type's prefix.
fn error_text(e: &ServiceError) -> String {
    match e {
        ServiceError::McpError(data) => data.message.to_string(),
        other => other.to_string(),
    }
}

impl Conn {
    /// `what`, then why the server is gone when it is (its exit status), then the end of
    /// its stderr.
    fn failure(&self, what: &str) -> String {
        let exit = lock(&self.process)
            .as_ref()
            .and_then(|p| *p.exit.borrow())
            .map(|s| format!(" (the server {})", exited(&s)))
            .unwrap_or_default();
        format!(
            "{what}{exit}{}{}",
            lock(&self.noise).suffix(),
            lock(&self.stderr).suffix()
        )
    }

    /// Registers the tools of a listing in place of the previous ones.
    fn install(self: &Arc<Self>, registry: &Registry, tools: &[rmcp::model::Tool]) {
        let mut handles = lock(&self.handles);
        for handle in handles.drain(..) {
            handle.dispose();
        }
        let mut warnings = Vec::new();
        let mut import_warnings = Vec::new();
        let mut defs = Vec::with_capacity(tools.len());
        for def in tools {
            match serde_json::to_value(def) {
                Ok(v) => defs.push(v),
                Err(e) => warnings.push(format!("tool {:?} skipped: {e}", def.name)),
            }
        }
        // Past the server's budget, its tools are listed by name only.
        let deferred = self.config.tool_budget.is_some_and(|budget| {
            let decls: Vec<_> = defs
                .iter()
                .filter_map(|d| self.tool(d, false).ok())
                .map(|(tool, _)| crate::declarations::tool_decl_of(&tool))
                .collect();
            codemode_codegen::declarations_with(&decls, crate::declarations::Layout::Compact)
                .is_ok_and(|d| crate::tokens::over_budget(&d, budget))
        });
        for def in defs {
            match self.tool(&def, deferred).and_then(|(tool, found)| {
                let name = tool.name().to_owned();
                let handle = registry.register(tool).map_err(|e| e.to_string())?;
                import_warnings.extend(found.into_iter().map(|w| (name.clone(), w)));
                Ok(handle)
            }) {
                Ok(handle) => handles.push(handle),
                Err(e) => warnings.push(format!(
                    "tool {:?} skipped: {e}",
                    def.get("name").and_then(Value::as_str).unwrap_or("")
                )),
            }
        }
        for w in &warnings {
            tracing::warn!(server = %self.config.name, "{w}");
        }
        *lock(&self.warnings) = warnings;
        *lock(&self.import_warnings) = import_warnings;
    }

    async fn relist(self: &Arc<Self>) {
        let Some(registry) = self.registry.upgrade() else {
            return;
        };
        match tokio::time::timeout(self.config.startup_timeout, self.peer.list_all_tools()).await {
            Ok(Ok(tools)) => self.install(&registry, &tools),
            Ok(Err(e)) => tracing::warn!(
                server = %self.config.name,
                "re-listing the tools failed: {}",
                error_text(&e)
            ),
            Err(_) => tracing::warn!(server = %self.config.name, "re-listing the tools timed out"),
        }
    }

    /// The tool for one entry of `tools/list`.
    fn tool(
        self: &Arc<Self>,
        def: &Value,
        deferred: bool,
    ) -> Result<(Tool, Vec<ImportWarning>), String> {
        let tool = def
            .get("name")
            .and_then(Value::as_str)
            .ok_or("it has no name")?
            .to_owned();
        let input = def
            .get("inputSchema")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({"type": "object"}));
        let (parameters, mut warnings) = ParameterSchema::from_json_schema(&input)
            .map_err(|e| format!("its inputSchema cannot be used: {}: {}", e.path, e.message))?;
        let output_schema = def.get("outputSchema").filter(|s| !s.is_null());
        let output = match output_schema {
            Some(schema) => {
                let (output, found) = ValueSchema::from_json_schema(schema).map_err(|e| {
                    format!("its outputSchema cannot be used: {}: {}", e.path, e.message)
                })?;
                warnings.extend(found);
                output
            }
            None => ValueSchema::default(),
        };
        let has_output_schema = output_schema.is_some();
        let description = def
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let conn = Arc::downgrade(self);
        // Shared, not copied, by each call.
        let server: Arc<str> = Arc::from(self.config.name.as_str());
        let name: Arc<str> = Arc::from(tool.as_str());
        let annotations = def
            .get("annotations")
            .map(crate::ToolAnnotations::from_mcp)
            .unwrap_or_default();
        Tool::builder(format!("{}.{tool}", self.config.name))
            .description(description)
            .annotations(annotations)
            .deferred(deferred)
            .parameters(parameters)
            .output(output)
            .execute(move |arguments, exec| {
                let conn = conn.upgrade();
                let tool = name.clone();
                let server = server.clone();
                async move {
                    let Some(conn) = conn else {
                        return Err(ToolError::new(format!(
                            "MCP server {server:?} is disconnected"
                        )));
                    };
                    conn.call(&tool, &arguments, exec, has_output_schema).await
                }
            })
            .build()
            .map(|tool| (tool, warnings))
            .map_err(|e| e.to_string())
    }

    /// One `tools/call`.
    async fn call(
        self: &Arc<Self>,
        tool: &str,
        arguments: &Value,
        exec: Exec,
        has_output_schema: bool,
    ) -> Result<Value, ToolError> {
        let server = &self.config.name;
        if self.peer.is_transport_closed() || self.link.as_ref().is_some_and(Link::has_ended) {
            let exit = lock(&self.process).as_ref().map(|p| p.exit.clone());
            if let Some(exit) = exit {
                Box::pin(exit_status(exit)).await;
            }
            return Err(ToolError::new(self.failure(&format!(
                "MCP server {server:?} is no longer running; {server}.{tool} cannot be called"
            ))));
        }
        let arguments = match arguments {
            Value::Object(map) => Some(map),
            _ => None,
        };
        let mut pending;
        let answer = match &self.link {
            // A stdio server's request is written now, from the call's first poll, its
            // progress token registered first.
            Some(link) => {
                let call = link.reserve();
                pending = Pending {
                    conn: self.clone(),
                    id: Some(call.id()),
                    token: call.token(),
                };
                self.register_progress(&pending.token, &exec);
                match link.send(&call, tool, arguments) {
                    Ok(answer) => Answered::Link(answer),
                    Err(e) => {
                        // Nothing was sent: nothing to cancel.
                        pending.id = None;
                        if e.kind() == std::io::ErrorKind::Other {
                            return Err(ToolError::new(
                                self.failure(&format!("{server}.{tool} could not be sent: {e}")),
                            ));
                        }
                        tracing::debug!("writing {server}.{tool} failed: {e}");
                        let closed = ServiceError::TransportClosed;
                        return Err(Box::pin(self.call_error(tool, &closed)).await);
                    }
                }
            }
            None => {
                let mut params = CallToolRequestParams::new(tool.to_owned());
                params.arguments = arguments.cloned();
                let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
                // Boxed: rmcp's send future is some 3.5 KiB and done at its first poll, so
                // it lives only that long instead of in every call in flight.
                let handle = Box::pin(
                    self.peer
                        .send_cancellable_request(request, PeerRequestOptions::no_options()),
                )
                .await;
                let handle = match handle {
                    Ok(handle) => handle,
                    Err(e) => return Err(Box::pin(self.call_error(tool, &e)).await),
                };
                pending = Pending {
                    conn: self.clone(),
                    id: Some(handle.id),
                    token: handle.progress_token,
                };
                self.register_progress(&pending.token, &exec);
                // The response straight from the handle's channel: with no options, rmcp's
                // `await_response` does only this (and removes a subscription this request
                // does not have), in a future of kilobytes that every call in flight would
                // carry.
                Answered::Rmcp(handle.rx)
            }
        };
        let limit = self.config.call_timeout;
        let answer = tokio::select! {
            biased;
            answer = answer => answer,
            () = exec.signal().cancelled() => {
                pending.cancel("the call was cancelled");
                return Err(ToolError::cancelled());
            }
            () = tokio::time::sleep(limit) => {
                pending.cancel("timeout");
                return Err(ToolError::with_kind(
                    ErrorKind::Timeout,
                    self.failure(&format!(
                        "MCP server {server:?} did not answer {server}.{tool} within its {} ms call timeout; the call was cancelled",
                        limit.as_millis()
                    )),
                ));
            }
        };
        pending.id = None;
        match answer {
            Ok(Answer::Result(mut result)) => {
                // The two common shapes without a detour through a JSON tree (same values as
                // `result_value` gives).
                if result.is_error != Some(true) {
                    if has_output_schema && let Some(value) = result.structured_content.take() {
                        return Ok(value);
                    }
                    if !has_output_schema
                        && result.content.len() == 1
                        && matches!(result.content[0], ContentBlock::Text(_))
                        && let Some(ContentBlock::Text(text)) = result.content.pop()
                    {
                        return Ok(Value::String(text.text));
                    }
                }
                let value = serde_json::to_value(&result).map_err(|e| {
                    ToolError::new(format!("{server}.{tool}: the result cannot be read: {e}"))
                })?;
                result_value(&value, has_output_schema, self.config.include_binary)
                    .map_err(ToolError::new)
            }
            Ok(Answer::Other) => Err(ToolError::new(format!(
                "{server}.{tool}: the server answered `tools/call` with something other than a tool result"
            ))),
            Ok(Answer::Invalid(why)) => Err(ToolError::new(self.failure(&format!(
                "{server}.{tool}: the server's answer cannot be read ({why})"
            )))),
            Ok(Answer::Error(data)) => {
                Err(Box::pin(self.call_error(tool, &ServiceError::McpError(data))).await)
            }
            Err(e) => Err(Box::pin(self.call_error(tool, &e)).await),
        }
    }

    /// Registers the call of `token` for progress reports, and delivers those that came
    /// before it.
    fn register_progress(&self, token: &ProgressToken, exec: &Exec) {
        let early = lock(&self.progress).register(token.clone(), exec.clone());
        for progress in early {
            exec.progress(progress);
        }
    }

    async fn call_error(&self, tool: &str, e: &ServiceError) -> ToolError {
        let server = &self.config.name;
        match e {
            ServiceError::McpError(data) => ToolError::new(data.message.to_string()),
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                // The connection closes as the server exits: wait for its status.
                let exit = lock(&self.process).as_ref().map(|p| p.exit.clone());
                if let Some(exit) = exit {
                    exit_status(exit).await;
                }
                ToolError::new(self.failure(&format!(
                    "MCP server {server:?} closed the connection during {server}.{tool}"
                )))
            }
            other => ToolError::new(format!("{server}.{tool}: {other}")),
        }
    }
}

/// Where a call's answer comes from: the stdio link, or rmcp's handle (other transports).
enum Answered {
    Link(tokio::sync::oneshot::Receiver<Answer>),
    Rmcp(tokio::sync::oneshot::Receiver<Result<ServerResult, ServiceError>>),
}

impl Future for Answered {
    type Output = Result<Answer, ServiceError>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        match self.get_mut() {
            Answered::Link(rx) => std::pin::Pin::new(rx)
                .poll(cx)
                .map(|answer| answer.map_err(|_| ServiceError::TransportClosed)),
            Answered::Rmcp(rx) => std::pin::Pin::new(rx).poll(cx).map(|answer| match answer {
                Ok(Ok(ServerResult::CallToolResult(result))) => Ok(Answer::Result(result)),
                Ok(Ok(_)) => Ok(Answer::Other),
                Ok(Err(e)) => Err(e),
                Err(_) => Err(ServiceError::TransportClosed),
            }),
        }
    }
}

/// A request in flight: its progress entry is removed when it ends, and a request that is
/// abandoned (its call dropped) is cancelled at the server.
struct Pending {
    conn: Arc<Conn>,
    id: Option<RequestId>,
    token: ProgressToken,
}

impl Pending {
    /// Sends `notifications/cancelled` for the request, without waiting for it to be
    /// written: a server that stopped reading its input must not hold the call's error back
    /// (the notification goes, or fails, when the connection does).
    fn cancel(&mut self, reason: &str) {
        if let Some(id) = self.id.take() {
            if let Some(link) = &self.conn.link {
                link.cancel(&id, reason);
                return;
            }
            let peer = self.conn.peer.clone();
            let reason = reason.to_owned();
            self.conn.runtime.spawn(async move {
                let _ = peer.notify_cancelled(cancelled(id, &reason)).await;
            });
        }
    }
}

fn cancelled(id: RequestId, reason: &str) -> CancelledNotificationParam {
    CancelledNotificationParam::new(Some(id), Some(reason.to_owned()))
}

impl Drop for Pending {
    fn drop(&mut self) {
        lock(&self.conn.progress).calls.remove(&self.token);
        // Only an abandoned call still has its id (the program ended with it in flight).
        self.cancel("the program ended");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watched() -> Watched<tokio::io::Empty> {
        Watched::new(tokio::io::empty(), Arc::default())
    }

    fn at(n: f64) -> Progress {
        Progress {
            progress: n,
            total: None,
            message: None,
        }
    }

    fn token(n: i64) -> ProgressToken {
        ProgressToken(rmcp::model::NumberOrString::Number(n))
    }

    #[test]
    fn reports_before_the_call_registers_are_kept_for_it_and_stale_ones_dropped() {
        let registry = crate::Registry::new();
        let tool = crate::Tool::builder("t.steps")
            .execute(|_args, _exec| async { Ok(Value::Null) })
            .build()
            .unwrap();
        let request = crate::Request::new(
            "t.steps",
            Value::Null,
            tokio_util::sync::CancellationToken::new(),
        );
        let exec = Exec::for_call(&registry, crate::dispatch::CallId(1), &tool, request);
        let mut table = ProgressTable::default();
        // The server reported before the call registered its token.
        assert!(table.report(&token(7), &at(1.0)).is_none());
        assert!(table.report(&token(7), &at(2.0)).is_none());
        let early = table.register(token(7), exec);
        assert_eq!(early, [at(1.0), at(2.0)]);
        // From now on reports go to the call; one that does not increase is stale.
        assert!(table.report(&token(7), &at(2.0)).is_none());
        assert!(table.report(&token(7), &at(3.0)).is_some());
        // Reports for tokens never registered are bounded: the oldest tokens go first.
        for n in 100..100 + EARLY_TOKENS as i64 + 5 {
            table.report(&token(n), &at(1.0));
        }
        assert_eq!(table.early.len(), EARLY_TOKENS);
        assert!(!table.early.contains_key(&ProgressTable::key(&token(100))));
        assert!(
            table
                .early
                .contains_key(&ProgressTable::key(&token(100 + EARLY_TOKENS as i64 + 4)))
        );
    }

    #[test]
    fn lines_that_could_not_be_read_are_said_in_errors() {
        let mut noise = Noise::default();
        noise.unreadable(b"{\"jsonrpc\":\"1.0\"}", "unrecognized JSON-RPC message");
        noise.unreadable(b"{}", "unrecognized JSON-RPC message");
        noise.lines = 1;
        noise.first = b"banner\n".to_vec();
        assert_eq!(
            noise.suffix(),
            "; it sent 2 lines that are no MCP message it can read (unrecognized JSON-RPC message), the first: \"{\\\"jsonrpc\\\":\\\"1.0\\\"}\"; it printed 1 line on stdout that is not MCP messages, the first: \"banner\""
        );
    }

    #[test]
    fn a_line_opened_by_a_byte_order_mark_is_a_message_and_watched_as_one() {
        let mut w = watched();
        // Whole, then split across reads, before a message: no noise.
        assert!(w.watch(b"\xEF\xBB\xBF{\"id\":1}"));
        let mut w = watched();
        assert!(w.watch(b"\xEF"));
        assert!(w.watch(b"\xBB\xBF"));
        assert!(w.watch(b"[1]"));
        assert_eq!(lock(&w.noise).lines, 0);
        // Its nesting is followed as any message's.
        let mut w = watched();
        assert!(w.watch(b"\xEF\xBB\xBF"));
        assert!(!w.watch("[".repeat(MAX_MESSAGE_DEPTH + 1).as_bytes()));
        assert!(lock(&w.noise).too_deep);
        // Only at the very start: after text, it is stray.
        let mut w = watched();
        assert!(w.watch(b" \xEF\xBB\xBF{}"));
        assert_eq!(lock(&w.noise).lines, 1);
    }

    #[test]
    fn nesting_is_followed_outside_strings_and_across_reads() {
        let mut w = watched();
        // Brackets in strings, escaped quotes among them, do not count.
        assert!(w.watch(br#"{"a": "[[[\"[[", "b": [[1]"#));
        assert_eq!((w.depth, w.in_string), (2, false));
        assert!(w.watch(b"]}"));
        assert_eq!(w.depth, 0);
        let mut w = watched();
        let fits = "[".repeat(MAX_MESSAGE_DEPTH);
        assert!(w.watch(fits.as_bytes()));
        // Split across two reads: the next level is one too many.
        assert!(!w.watch(b"["));
        assert!(lock(&w.noise).too_deep);
    }
}
