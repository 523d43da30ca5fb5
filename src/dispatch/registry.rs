//! The tool registry: effect-based registration, name rules, the
//! model-facing projection and the entry point of dispatch.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock, Weak};

use indexmap::IndexMap;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::agent::Agent;
use super::around::Around;
use super::call::{CallId, CallToken};
use super::guard::Guard;
use super::hooks::{HookHandle, Hooks};
use super::observe::{Observer, ProgressSink};
use super::outcome::Outcome;
use super::post_execute::PostExecute;
use super::pre_execute::{Approver, PreExecute};
use super::tool::{Tool, ToolSchema, Visibility};
use crate::value::FxBuild;

/// Most characters a tool name may have.
pub const MAX_TOOL_NAME_LEN: usize = 128;

/// Names a tool cannot take because the sandbox's `tools` object, promises or JSON need
/// them: `then` (it would make `await tools` hang), `toJSON`, the names of
/// `Object.prototype`, and the discovery functions `$search` and `$describe` (see
/// [`crate::discovery`]).
pub const RESERVED_TOOL_NAMES: &[&str] = &[
    "$search",
    "$describe",
    "then",
    "catch",
    "finally",
    "toJSON",
    "constructor",
    "prototype",
    "__proto__",
    "toString",
    "toLocaleString",
    "valueOf",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "__defineGetter__",
    "__defineSetter__",
    "__lookupGetter__",
    "__lookupSetter__",
];

/// Why a tool was not registered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// The name is empty, too long, has control characters, or is reserved.
    #[error("tool name {name:?} is not allowed: {reason}")]
    InvalidName {
        /// The refused name.
        name: String,
        /// Why.
        reason: String,
    },
    /// A tool with this name is registered.
    #[error("a tool named `{0}` is already registered; dispose its handle first to replace it")]
    Duplicate(String),
    /// The name's sandbox alias is taken by another tool's name or alias.
    #[error(
        "tool `{name}` would be `tools.{alias}` in programs, which is already tool `{other}`; rename one of them"
    )]
    AliasCollision {
        /// The refused name.
        name: String,
        /// Its alias.
        alias: String,
        /// The tool that has that name or alias.
        other: String,
    },
}

/// The sanitised alias of a tool name: every character outside `[A-Za-z0-9_$]` becomes `_`,
/// and a leading digit gets a `_` in front (`my-tool` → `my_tool`, `fs.read` → `fs_read`).
pub fn tool_alias(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 1);
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        out.push('_');
    }
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '$' {
            out.push(c);
        } else {
            out.push('_');
        }
    }
    out
}

/// The set of tools, the policy hooks, and the entry point of dispatch.
///
/// Cheap to clone: clones share one registry. No state is global: limits, tools and
/// policy belong to a registry instance.
///
/// ```
/// # tokio_test_block_on(async {
/// use codemode::{Registry, Tool};
/// let registry = Registry::new();
/// let handle = registry
///     .register(Tool::builder("ping").execute(|_a, _e| async { Ok("pong".into()) }).build().unwrap())
///     .unwrap();
/// let outcome = registry.call("ping", serde_json::json!({})).await;
/// assert_eq!(outcome.value(), Some(&serde_json::json!("pong")));
/// drop(handle); // unregisters
/// assert!(registry.call("ping", serde_json::json!({})).await.is_error());
/// # });
/// # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Clone)]
pub struct Registry {
    pub(crate) inner: Arc<RegistryInner>,
}

/// A registry reference that does not keep it alive (held by calls and handles).
#[derive(Clone)]
pub(crate) struct WeakRegistry(Weak<RegistryInner>);

impl WeakRegistry {
    pub(crate) fn upgrade(&self) -> Option<Registry> {
        self.0.upgrade().map(|inner| Registry { inner })
    }

    pub(crate) fn dangling() -> Self {
        WeakRegistry(Weak::new())
    }
}

pub(crate) struct RegistryInner {
    tools: RwLock<ToolTable>,
    next_entry: AtomicU64,
    pub(crate) next_call: AtomicU64,
    token_seed: u64,
    pub(crate) agent: Agent,
    pub(crate) hooks: Hooks,
    jobs: super::jobs::Jobs,
    /// Counts changes of the tool set, for [`Registry::watch_tools`].
    changes: tokio::sync::watch::Sender<u64>,
    /// Bumped under the table's write lock at each change of the tool set: a lookup cached
    /// at an older generation may be stale (see [`Registry::generation`]).
    generation: AtomicU64,
}

#[derive(Default)]
struct ToolTable {
    by_name: IndexMap<Arc<str>, Entry, FxBuild>,
    /// alias → name, for names whose alias differs from the name.
    aliases: HashMap<String, Arc<str>, FxBuild>,
}

struct Entry {
    id: u64,
    tool: Tool,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.names())
            .finish_non_exhaustive()
    }
}

impl Registry {
    /// An empty registry with its own default [`Agent`].
    pub fn new() -> Registry {
        Registry {
            inner: Arc::new(RegistryInner {
                tools: RwLock::new(ToolTable::default()),
                next_entry: AtomicU64::new(1),
                next_call: AtomicU64::new(1),
                token_seed: RandomState::new().hash_one(0x636f_6465_6d6f_6465u64),
                agent: Agent::new(),
                hooks: Hooks::default(),
                jobs: super::jobs::Jobs::default(),
                changes: tokio::sync::watch::Sender::new(0),
                generation: AtomicU64::new(0),
            }),
        }
    }

    /// A receiver that sees a new value each time a tool is registered or unregistered
    /// (a hot swap is two changes): what an MCP server watches to send
    /// `notifications/tools/list_changed`. The value counts changes since the registry was
    /// made.
    pub fn watch_tools(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    fn tools_changed(&self) {
        self.inner.changes.send_modify(|n| *n += 1);
    }

    pub(crate) fn downgrade(&self) -> WeakRegistry {
        WeakRegistry(Arc::downgrade(&self.inner))
    }

    /// The agent calls belong to when their request names none.
    pub fn agent(&self) -> &Agent {
        &self.inner.agent
    }

    /// The registry's background-job runtime ([`Jobs`](super::jobs::Jobs)): tools that run in
    /// the background start their jobs here, and `job_output`, `job_kill` and `job_list`
    /// read them.
    pub fn jobs(&self) -> &super::jobs::Jobs {
        &self.inner.jobs
    }

    /// Registers a tool. The tool stays registered while the returned handle lives:
    /// dropping or [disposing](ToolHandle::dispose) it unregisters the tool. Hot swap is
    /// dispose + register: calls already running finish with the old definition.
    ///
    /// # Errors
    /// [`RegisterError`] for a refused name, a duplicate, or a sandbox alias that collides
    /// with another tool (`a-b` and `a_b`).
    pub fn register(&self, tool: Tool) -> Result<ToolHandle, RegisterError> {
        let name = tool.name().to_owned();
        check_name(&name)?;
        let alias = tool_alias(&name);
        let mut table = self
            .inner
            .tools
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if table.by_name.contains_key(name.as_str()) {
            return Err(RegisterError::Duplicate(name));
        }
        if let Some(other) = table.aliases.get(&name) {
            return Err(RegisterError::AliasCollision {
                name: name.clone(),
                alias: name.clone(),
                other: other.to_string(),
            });
        }
        if alias != name {
            let other = table
                .by_name
                .get_key_value(alias.as_str())
                .map(|(k, _)| k.clone())
                .or_else(|| table.aliases.get(&alias).cloned());
            if let Some(other) = other {
                return Err(RegisterError::AliasCollision {
                    name,
                    alias,
                    other: other.to_string(),
                });
            }
        }
        let id = self.inner.next_entry.fetch_add(1, Ordering::Relaxed);
        let key: Arc<str> = tool.inner.name.clone();
        if alias != name {
            table.aliases.insert(alias, key.clone());
        }
        table.by_name.insert(key.clone(), Entry { id, tool });
        self.inner.generation.fetch_add(1, Ordering::Release);
        drop(table);
        self.tools_changed();
        Ok(ToolHandle {
            registry: self.downgrade(),
            name: key,
            id,
        })
    }

    fn unregister(&self, name: &str, id: u64) {
        let mut table = self
            .inner
            .tools
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if table.by_name.get(name).is_some_and(|e| e.id == id) {
            table.by_name.shift_remove(name);
            let alias = tool_alias(name);
            if table.aliases.get(&alias).is_some_and(|n| &**n == name) {
                table.aliases.remove(&alias);
            }
            self.inner.generation.fetch_add(1, Ordering::Release);
            drop(table);
            self.tools_changed();
        }
    }

    /// The generation of the tool set: it changes whenever a tool is registered or
    /// unregistered, so a tool looked up by name while it was `g` is still the one that
    /// name finds as long as it is `g` (read it before the lookup).
    pub(crate) fn generation(&self) -> u64 {
        self.inner.generation.load(Ordering::Acquire)
    }

    /// The registered tool named `name` (or whose alias is `name`).
    pub fn get(&self, name: &str) -> Option<Tool> {
        let table = self
            .inner
            .tools
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(e) = table.by_name.get(name) {
            return Some(e.tool.clone());
        }
        let real = table.aliases.get(name)?;
        table.by_name.get(&**real).map(|e| e.tool.clone())
    }

    /// Every registered tool, in registration order.
    pub fn tools(&self) -> Vec<Tool> {
        let table = self
            .inner
            .tools
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        table.by_name.values().map(|e| e.tool.clone()).collect()
    }

    /// The names of every registered tool, in registration order.
    pub fn names(&self) -> Vec<String> {
        let table = self
            .inner
            .tools
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        table.by_name.keys().map(|k| k.to_string()).collect()
    }

    /// The tools a program sees as `tools.*` (visible, not hidden from the sandbox).
    pub fn sandbox_tools(&self) -> Vec<Tool> {
        self.tools()
            .into_iter()
            .filter(|t| t.visibility() == Visibility::Visible)
            .collect()
    }

    /// The model-facing projection of the visible tools: name, description and JSON
    /// Schemas only.
    pub fn schemas(&self) -> Vec<ToolSchema> {
        self.tools()
            .into_iter()
            .filter(|t| t.visibility() != Visibility::Hidden)
            .map(|t| {
                let mut schema = t.schema();
                schema.description = t.description_in(self);
                schema
            })
            .collect()
    }

    /// The id of the next call this registry dispatches.
    pub(crate) fn next_call_id(&self) -> CallId {
        CallId(self.inner.next_call.fetch_add(1, Ordering::Relaxed))
    }

    pub(crate) fn new_token(&self, call: u64) -> CallToken {
        // splitmix64 of the call number and the registry's seed: unique per call, not
        // guessable from the call id.
        let mut z = call
            .wrapping_add(self.inner.token_seed)
            .wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        CallToken(z ^ (z >> 31))
    }

    fn hook(&self, change: impl FnOnce(&mut super::hooks::HookSet, u64)) -> HookHandle {
        HookHandle {
            registry: self.downgrade(),
            id: self.inner.hooks.update(change),
        }
    }

    /// Adds a `pre_execute` listener (stage 2): allow, deny with a reason, or ask the
    /// approver. Listeners run in the order they were added; the first that does not allow
    /// decides.
    pub fn pre_execute(&self, listener: impl PreExecute) -> HookHandle {
        let listener: Arc<dyn PreExecute> = Arc::new(listener);
        self.hook(|set, id| set.pre.push((id, listener)))
    }

    /// Adds a guard (stage 3): the final, monotonic deny that nothing later can undo.
    pub fn guard(&self, guard: impl Guard) -> HookHandle {
        let guard: Arc<dyn Guard> = Arc::new(guard);
        self.hook(|set, id| set.guards.push((id, guard)))
    }

    /// Adds an around-wrapper (stage 4). The first added is the outermost layer; see
    /// [`Around`] for the order, drawn as an onion.
    pub fn around(&self, wrapper: impl Around) -> HookHandle {
        let wrapper: Arc<dyn Around> = Arc::new(wrapper);
        self.hook(|set, id| set.around.push((id, wrapper)))
    }

    /// Adds a `post_execute` listener (stage 7): replace the content or the value, block
    /// the result, attach context.
    pub fn post_execute(&self, listener: impl PostExecute) -> HookHandle {
        let listener: Arc<dyn PostExecute> = Arc::new(listener);
        self.hook(|set, id| set.post.push((id, listener)))
    }

    /// Adds a `result` observer (stage 8): sees every finished call's outcome, read-only.
    pub fn observe(&self, observer: impl Observer) -> HookHandle {
        let observer: Arc<dyn Observer> = Arc::new(observer);
        self.hook(|set, id| set.observers.push((id, observer)))
    }

    /// Sets (or, with `None`, removes) the approver that answers `Decision::Ask`. Without
    /// one (or when it cannot answer, see [`Approver::can_answer`]), `Ask` is a denial that
    /// says so, except in a `run_code` run that can pause: the run pauses at the call (see
    /// [`crate::run_code::RunCodeConfig::paused_runs`]).
    pub fn set_approver(&self, approver: Option<Arc<dyn Approver>>) {
        self.inner.hooks.update(|set, _| set.approver = approver);
    }

    /// Whether a call made on behalf of `exec` (a run's nested call) could be left waiting
    /// for a decision: an installed `pre_execute` listener may answer `ask` (see
    /// [`PreExecute::may_ask`]) and no approver can answer for it now.
    pub(crate) fn asks_wait(&self, exec: &super::Exec) -> bool {
        let hooks = self.inner.hooks.snapshot();
        hooks.pre.iter().any(|(_, listener)| listener.may_ask())
            && hooks.approver.as_ref().is_none_or(|a| !a.can_answer(exec))
    }

    /// Calls a tool with a fresh cancellation signal and the registry's agent.
    pub fn call(
        &self,
        name: &str,
        arguments: Value,
    ) -> impl Future<Output = Outcome> + Send + 'static {
        self.dispatch(Request::new(name, arguments, CancellationToken::new()))
    }

    /// Runs one call through the whole pipeline: validation, policy, execute,
    /// output check, render, post-execute, observers. Never panics and never fails: every
    /// failure is an error [`Outcome`].
    pub fn dispatch(&self, request: Request) -> impl Future<Output = Outcome> + Send + 'static {
        super::pipeline::run(self.clone(), request, None)
    }

    /// [`dispatch`](Self::dispatch) of a request for `tool`, which the caller looked up by
    /// the request's name at the current [`generation`](Self::generation).
    pub(crate) fn dispatch_to(
        &self,
        tool: Tool,
        request: Request,
    ) -> impl Future<Output = Outcome> + Send + 'static {
        super::pipeline::run(self.clone(), request, Some(tool))
    }
}

fn check_name(name: &str) -> Result<(), RegisterError> {
    let refuse = |reason: &str| {
        Err(RegisterError::InvalidName {
            name: name.to_owned(),
            reason: reason.to_owned(),
        })
    };
    if name.is_empty() {
        return refuse("it is empty");
    }
    if name.chars().count() > MAX_TOOL_NAME_LEN {
        return refuse("it is longer than 128 characters");
    }
    if name.chars().any(char::is_control) {
        return refuse("it contains control characters");
    }
    if RESERVED_TOOL_NAMES.contains(&name)
        || RESERVED_TOOL_NAMES.contains(&tool_alias(name).as_str())
    {
        return refuse(
            "the sandbox's `tools` object, promises, JSON or tool discovery use that name",
        );
    }
    Ok(())
}

/// Keeps a tool registered; dropping it (or [`ToolHandle::dispose`]) unregisters the tool.
///
/// A handle only removes the registration it created: after a hot swap, dropping the old
/// handle leaves the new definition in place.
pub struct ToolHandle {
    registry: WeakRegistry,
    name: Arc<str>,
    id: u64,
}

impl fmt::Debug for ToolHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolHandle")
            .field("name", &self.name)
            .finish()
    }
}

impl ToolHandle {
    /// The registered name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Unregisters the tool now.
    pub fn dispose(self) {
        drop(self);
    }

    /// Keeps the tool registered for the registry's whole life.
    pub fn forget(mut self) {
        self.registry = WeakRegistry(Weak::new());
    }
}

impl Drop for ToolHandle {
    fn drop(&mut self) {
        if let Some(registry) = self.registry.upgrade() {
            registry.unregister(&self.name, self.id);
        }
    }
}

/// One call to dispatch: which tool, its arguments, and its identity.
///
/// The cancellation `signal` is required: cancel it to cancel the call and
/// everything it started.
#[derive(Clone, Debug)]
pub struct Request {
    pub(crate) name: Arc<str>,
    pub(crate) arguments: Value,
    /// Shared: a run's calls all hold its one signal (a count, not a new handle, per call).
    pub(crate) signal: Arc<CancellationToken>,
    pub(crate) parent: Option<CallToken>,
    pub(crate) agent: Option<Agent>,
    pub(crate) nested: bool,
    pub(crate) progress: Option<ProgressSink>,
    pub(crate) ask: AskMode,
}

/// What an `ask` decision does when the registry has no approver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum AskMode {
    /// The call is denied and says why (a direct call, or a run that cannot pause).
    #[default]
    Deny,
    /// The call ends with [`ErrorKind::NeedsApproval`](super::ErrorKind::NeedsApproval):
    /// its run pauses.
    Pause,
    /// A person approved this very call when the run it belongs to was resumed: `ask`
    /// decisions let it through without asking again (a `deny` still refuses it).
    Approved,
}

impl Request {
    /// A call of `name` with `arguments`, cancelled through `signal`.
    pub fn new(name: impl Into<Arc<str>>, arguments: Value, signal: CancellationToken) -> Request {
        Request::with_shared_signal(name, arguments, Arc::new(signal))
    }

    /// A call of `name` with `arguments`, cancelled through a signal other calls share.
    pub(crate) fn with_shared_signal(
        name: impl Into<Arc<str>>,
        arguments: Value,
        signal: Arc<CancellationToken>,
    ) -> Request {
        Request {
            name: name.into(),
            arguments,
            signal,
            parent: None,
            agent: None,
            nested: false,
            progress: None,
            ask: AskMode::Deny,
        }
    }

    /// Sets what an `ask` decision does without an approver (the sandbox's calls).
    pub(crate) fn ask(mut self, ask: AskMode) -> Request {
        self.ask = ask;
        self
    }

    /// Marks the call as made by the call whose token is `parent`.
    pub fn parent(mut self, parent: CallToken) -> Request {
        self.parent = Some(parent);
        self
    }

    /// The agent the call belongs to. Default: the registry's agent.
    pub fn agent(mut self, agent: Agent) -> Request {
        self.agent = Some(agent);
        self
    }

    /// Sends this call's progress reports, and those of the calls made from inside it, to
    /// `sink` as well as to the registry's observers (an MCP server forwards them to the
    /// client that asked for them). Default: observers only.
    pub fn report_progress_to(mut self, sink: ProgressSink) -> Request {
        self.progress = Some(sink);
        self
    }

    /// Marks the call as made from inside a `run_code` program: rendering and
    /// `presentation_meta` are skipped, the program receives the canonical value.
    pub fn nested(mut self, nested: bool) -> Request {
        self.nested = nested;
        self
    }
}

/// The one of `candidates` closest to `name` (see [`closest_names`]).
pub(crate) fn closest_name<'c>(name: &str, candidates: &[&'c str]) -> Option<&'c str> {
    closest_names(name, candidates, 1).first().copied()
}

/// The (at most `most`) `candidates` near enough to `name` to be a likely typo, closest
/// first: by edit distance ignoring case, a `SERVER.tool` candidate also by its `tool`
/// part alone (so `create_entities` finds `memory.create_entities`). A name more than
/// twice as long as a tool name can be is near nothing (and costs nothing to compare).
pub(crate) fn closest_names<'c>(name: &str, candidates: &[&'c str], most: usize) -> Vec<&'c str> {
    if name.len() > 2 * MAX_TOOL_NAME_LEN * 4 || name.chars().count() > 2 * MAX_TOOL_NAME_LEN {
        return Vec::new();
    }
    let lower = name.to_lowercase();
    let mut near: Vec<(usize, usize, &'c str)> = Vec::new();
    for (i, t) in candidates.iter().enumerate() {
        let t_lower = t.to_lowercase();
        let mut d = edit_distance(&lower, &t_lower);
        let mut len = t.len();
        if let Some((_, tail)) = t_lower.split_once('.') {
            let dt = edit_distance(&lower, tail);
            if dt < d {
                d = dt;
                len = tail.len();
            }
        }
        if d <= (len.max(name.len()) / 3).max(2) {
            near.push((d, i, t));
        }
    }
    near.sort_unstable();
    near.into_iter().take(most).map(|(_, _, t)| t).collect()
}

/// `name` as messages quote it: whole when it could be a tool name, else its start and its
/// length (a program can ask for a name of a million characters).
pub(crate) fn quoted_name(name: &str) -> String {
    if name.chars().count() <= MAX_TOOL_NAME_LEN {
        return format!("{name:?}");
    }
    let start: String = name.chars().take(40).collect();
    format!("{start:?}… ({} characters)", name.chars().count())
}

/// `unknown tool "name"`, with `; did you mean "a", "b" or "c"?` when tools are near.
pub(crate) fn unknown_tool_phrase(name: &str, tools: &[&str]) -> String {
    let near = closest_names(name, tools, 3);
    let shown = quoted_name(name);
    match near.as_slice() {
        [] => format!("unknown tool {shown}"),
        [one] => format!("unknown tool {shown}; did you mean {one:?}?"),
        [first @ .., last] => {
            let first: Vec<String> = first.iter().map(|n| format!("{n:?}")).collect();
            format!(
                "unknown tool {shown}; did you mean {} or {last:?}?",
                first.join(", ")
            )
        }
    }
}

/// The list of `tools` as messages show it (at most 40 names).
pub(crate) fn tool_list(tools: &[String]) -> String {
    if tools.is_empty() {
        "none".to_owned()
    } else {
        crate::value::name_list(tools.iter().map(String::as_str), 40)
    }
}

/// The message for a call of `name` when it is not one of `tools`: the closest tool names
/// (up to 3) when some are near, then the list of tools.
pub(crate) fn unknown_tool_message(name: &str, tools: &[String]) -> String {
    let refs: Vec<&str> = tools.iter().map(String::as_str).collect();
    let phrase = unknown_tool_phrase(name, &refs);
    let list = tool_list(tools);
    if phrase.ends_with('?') {
        format!("{phrase} Available tools: {list}")
    } else {
        format!("{phrase}; available tools: {list}")
    }
}

/// [`unknown_tool_message`] for a name a program used: it also names the tools the program
/// may have meant with `tools.<name>` followed by more of a tool's name (`tools.fs.read`
/// reads `fs` when the tool is `fs.read`), and says how to search the tools (see
/// [`crate::discovery`]).
pub(crate) fn unknown_tool_in_program(name: &str, tools: &[String]) -> String {
    // Every such tool, up to 10 (the program's whole name is not known here: `tools.fs`
    // is read before `.read`).
    const MOST_SHOWN: usize = 10;
    let all: Vec<&String> = tools
        .iter()
        .filter(|tool| cut_at_name(name, tool))
        .collect();
    let mut cut: Vec<String> = all
        .iter()
        .take(MOST_SHOWN)
        .map(|tool| format!("tools[{tool:?}] (or tools.{})", tool_alias(tool)))
        .collect();
    if all.len() > MOST_SHOWN {
        cut.push(format!("and {} more", all.len() - MOST_SHOWN));
    }
    let mut message = if cut.is_empty() {
        unknown_tool_message(name, tools)
    } else {
        // Those are what the program meant: no other name is suggested.
        format!(
            "unknown tool {}; available tools: {}. A tool whose name has characters a JavaScript name cannot have is called with brackets or by its alias: {}",
            quoted_name(name),
            tool_list(tools),
            cut.join(", ")
        )
    };
    message.push_str(". Search by words with `await tools.$search(\"…\")`");
    message
}

/// Whether `tools.<name>` is what JavaScript reads of `tools.<tool>`: `tool` is `name`
/// followed by a character no JavaScript name can have (`.` in `fs.read`, `-` in
/// `get-sum`), so that the rest is read as another expression.
fn cut_at_name(name: &str, tool: &str) -> bool {
    !name.is_empty()
        && tool.strip_prefix(name).is_some_and(|rest| {
            rest.chars()
                .next()
                .is_some_and(|c| !(c.is_alphanumeric() || c == '_' || c == '$'))
        })
}

/// Levenshtein distance in chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}
