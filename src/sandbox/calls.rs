//! The table of a run's tool calls: one typed slot per call, from the moment the program
//! makes it to the record in `run_code`'s `calls`.
//!
//! A call is numbered in the order the program made it (its [`CallId`], from 1). It is
//! counted against `max_tool_calls` from then on, whatever becomes of it; it starts at once
//! when fewer than `max_in_flight` calls are running, else it waits in a queue, in order.
//!
//! ```text
//!   refuse ──────────────────────────────────────────────┐
//!   open ──> Queued{args} ──(room)──> Running{since} ──> Done{status, ms}
//!     └────> Starting ──(first poll: pending)──┘     ▲
//!                └──(first poll: ready)──────────────┘
//! ```
//!
//! A call still `Queued` when the run ends never reached a tool: it is not listed.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::Future;
use tokio_util::sync::CancellationToken;

use super::inflight::CallWake;
use super::report::{CallRecord, CallStatus};
use crate::dispatch::registry::AskMode;
use crate::dispatch::{
    Agent, CallToken, ErrorKind, Outcome, ProgressSink, Registry, Request, Tool,
};

/// A call's number in its run: 1 for the first call the program made.
pub(super) type CallId = u64;

/// A started call: its outcome, once the dispatch pipeline is done with it.
pub(super) type CallFuture = Pin<Box<dyn Future<Output = Outcome> + Send>>;

/// What starting a call needs.
pub(super) struct Dispatch {
    pub(super) registry: Registry,
    pub(super) agent: Agent,
    pub(super) parent: Option<CallToken>,
    /// The signal of every nested call: cancelled when the program ends, and a child of the
    /// `run_code` call's signal, so cancelling the run cancels its calls.
    pub(super) signal: Arc<CancellationToken>,
    /// Where the `run_code` call's progress reports go: its calls report there too.
    pub(super) progress: Option<ProgressSink>,
}

impl Dispatch {
    /// Starts a call of `name`; `tool` is the tool that name finds, when known.
    fn start(
        &self,
        name: Arc<str>,
        tool: Option<Tool>,
        args: serde_json::Value,
        ask: AskMode,
    ) -> CallFuture {
        let mut request = Request::with_shared_signal(name, args, self.signal.clone())
            .nested(true)
            .ask(ask)
            .agent(self.agent.clone());
        if let Some(parent) = self.parent {
            request = request.parent(parent);
        }
        if let Some(sink) = &self.progress {
            request = request.report_progress_to(sink.clone());
        }
        match tool {
            Some(tool) => Box::pin(self.registry.dispatch_to(tool, request)),
            None => Box::pin(self.registry.dispatch(request)),
        }
    }
}

/// Where one call is.
enum CallState {
    /// Waiting for room under `max_in_flight`, its arguments converted (boxed: a slot is
    /// then a third of the size, and the table of a run's calls grows by copying slots).
    Queued {
        args: Box<serde_json::Value>,
        ask: AskMode,
    },
    /// Made while the run replays its journal: a later turn (or the end of the replay)
    /// settles it; nothing was dispatched.
    Replayed,
    /// Started by a tool function, which has not polled it yet.
    Starting,
    /// In flight since `since`.
    Running { since: Instant },
    /// Over: how it ended and how long it took, in milliseconds.
    Done { status: CallStatus, ms: u64 },
}

/// One call: the index of its tool in the run's tool names, and where it is.
struct Call {
    tool: usize,
    state: CallState,
}

/// How [`Calls::open`] went.
pub(super) enum Opened {
    /// The call waits in the queue.
    Queued(CallId),
    /// The call started: the caller polls it once, then hands it over with
    /// [`Calls::pending`] or closes it with [`Calls::finish`].
    Started(CallId, CallFuture),
}

/// The calls of one run.
pub(super) struct Calls {
    /// Every call the program made, at index `id - 1`.
    calls: Vec<Call>,
    /// The queued calls, in order.
    queue: VecDeque<CallId>,
    /// Calls started whose outcome has not arrived.
    in_flight: usize,
    max_in_flight: usize,
    /// Calls a tool function started that did not finish on their first poll, with the
    /// waker of that poll, for the loop to poll.
    started: Vec<(CallId, CallFuture, CallWake)>,
    /// Outcomes a resumed run recorded, for the loop to deliver as calls that are done.
    ready: Vec<(CallId, CallFuture)>,
    /// What an `ask` decision does for the calls that start from now on.
    pub(super) ask: AskMode,
    /// The name of each tool the program sees, by index.
    tools: Vec<Arc<str>>,
    /// The tool each name found, by index, and the registry's generation when it was looked
    /// up: a program calling one tool again and again looks it up once.
    found: Vec<Option<(u64, Tool)>>,
    dispatch: Dispatch,
}

// A run's table of calls grows by copying slots: keep them small.
const _: () = assert!(std::mem::size_of::<Call>() <= 32);

impl Calls {
    pub(super) fn new(tools: Vec<Arc<str>>, max_in_flight: usize, dispatch: Dispatch) -> Self {
        Calls {
            calls: Vec::new(),
            queue: VecDeque::new(),
            in_flight: 0,
            max_in_flight,
            started: Vec::new(),
            ready: Vec::new(),
            ask: AskMode::Deny,
            found: vec![None; tools.len()],
            tools,
            dispatch,
        }
    }

    /// The name of the tool at `tool`.
    pub(super) fn tool_name(&self, tool: usize) -> Option<&Arc<str>> {
        self.tools.get(tool)
    }

    /// The names of the tools the program sees.
    pub(super) fn tool_names(&self) -> &[Arc<str>] {
        &self.tools
    }

    /// The registry the calls dispatch in.
    pub(super) fn registry(&self) -> &Registry {
        &self.dispatch.registry
    }

    /// The calls the program made so far (what `max_tool_calls` bounds).
    pub(super) fn made(&self) -> usize {
        self.calls.len()
    }

    /// The calls started whose outcome has not arrived.
    pub(super) fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Whether calls wait for room.
    pub(super) fn any_queued(&self) -> bool {
        !self.queue.is_empty()
    }

    /// A call whose arguments could not be read: counted and listed as failed (0 ms), as
    /// one whose arguments break the tool's schema is, but never started.
    pub(super) fn refuse(&mut self, tool: usize) {
        self.calls.push(Call {
            tool,
            state: CallState::Done {
                status: CallStatus::Error,
                ms: 0,
            },
        });
    }

    /// A new call of the tool at `tool` (named `name`): started when fewer than
    /// `max_in_flight` calls are in flight, queued otherwise.
    pub(super) fn open(&mut self, tool: usize, name: &Arc<str>, args: serde_json::Value) -> Opened {
        let id = self.calls.len() as CallId + 1;
        if self.in_flight >= self.max_in_flight {
            self.calls.push(Call {
                tool,
                state: CallState::Queued {
                    args: Box::new(args),
                    ask: self.ask,
                },
            });
            self.queue.push_back(id);
            return Opened::Queued(id);
        }
        self.in_flight += 1;
        self.calls.push(Call {
            tool,
            state: CallState::Starting,
        });
        let found = self.found(tool);
        Opened::Started(id, self.dispatch.start(name.clone(), found, args, self.ask))
    }

    /// The tool at `tool` as the registry has it now: looked up again only when the tool
    /// set changed since the last look (`None` when the name finds nothing).
    fn found(&mut self, tool: usize) -> Option<Tool> {
        let registry = &self.dispatch.registry;
        let generation = registry.generation();
        let slot = self.found.get_mut(tool)?;
        if let Some((seen, found)) = slot
            && *seen == generation
        {
            return Some(found.clone());
        }
        let found = registry.get(self.tools.get(tool)?)?;
        *slot = Some((generation, found.clone()));
        Some(found)
    }

    /// The id the next call will have.
    pub(super) fn next_id(&self) -> CallId {
        self.calls.len() as CallId + 1
    }

    /// A call made while the run replays its journal: numbered, never dispatched.
    pub(super) fn open_replayed(&mut self, tool: usize) -> CallId {
        self.calls.push(Call {
            tool,
            state: CallState::Replayed,
        });
        self.calls.len() as CallId
    }

    /// The replay is over: call `id`, made while replaying, is delivered `outcome` (as a
    /// call that is done) or dispatched now with `args` (`approved`: a person approved it).
    pub(super) fn go_live(&mut self, id: CallId, live: super::journal::GoLive) {
        let ask = self.ask;
        let Some(call) = self.slot(id) else {
            return;
        };
        match live {
            super::journal::GoLive::Deliver(outcome) => {
                call.state = CallState::Running {
                    since: Instant::now(),
                };
                self.in_flight += 1;
                self.ready
                    .push((id, Box::pin(futures::future::ready(outcome))));
            }
            super::journal::GoLive::Dispatch {
                arguments,
                approved,
            } => {
                call.state = CallState::Queued {
                    args: Box::new(arguments),
                    ask: if approved { AskMode::Approved } else { ask },
                };
                self.queue.push_back(id);
            }
        }
    }

    /// Hands the loop the calls tool functions started, and no queued call: the run is
    /// pausing, and nothing starts after the program's last turn.
    pub(super) fn take_started(
        &mut self,
        mut poll: impl FnMut(CallId, CallFuture, Option<CallWake>),
    ) {
        for (id, call, wake) in self.started.drain(..) {
            poll(id, call, Some(wake));
        }
    }

    /// The call `id` did not finish on its first poll (made with `wake`): it runs from
    /// now, and the loop polls `call` from here on.
    pub(super) fn pending(&mut self, id: CallId, call: CallFuture, wake: CallWake) {
        if let Some(c) = self.slot(id) {
            c.state = CallState::Running {
                since: Instant::now(),
            };
        }
        self.started.push((id, call, wake));
    }

    /// A started call's outcome arrived: one more call may start.
    pub(super) fn landed(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// Records how the call `id` ended: its outcome's own timing `took` when it finished,
    /// the time since it started when it was cancelled unfinished (`None`).
    pub(super) fn finish(&mut self, id: CallId, status: CallStatus, took: Option<Duration>) {
        let Some(call) = self.slot(id) else {
            return;
        };
        let ms = match (took, &call.state) {
            (Some(d), _) => d.as_millis() as u64,
            (None, CallState::Running { since }) => since.elapsed().as_millis() as u64,
            (None, _) => 0,
        };
        call.state = CallState::Done { status, ms };
    }

    /// Hands the loop what it must poll from now on: the calls tool functions started, then
    /// the queued calls there is room for now, which start here.
    pub(super) fn take_ready(
        &mut self,
        mut poll: impl FnMut(CallId, CallFuture, Option<CallWake>),
    ) {
        for (id, call, wake) in self.started.drain(..) {
            poll(id, call, Some(wake));
        }
        for (id, call) in self.ready.drain(..) {
            poll(id, call, None);
        }
        while self.in_flight < self.max_in_flight {
            let Some(id) = self.queue.pop_front() else {
                break;
            };
            let Some(call) = self.calls.get_mut((id - 1) as usize) else {
                continue;
            };
            let CallState::Queued { args, ask } = std::mem::replace(
                &mut call.state,
                CallState::Running {
                    since: Instant::now(),
                },
            ) else {
                continue;
            };
            self.in_flight += 1;
            let tool = call.tool;
            let name = self.tools[tool].clone();
            let found = self.found(tool);
            poll(id, self.dispatch.start(name, found, *args, ask), None);
        }
    }

    /// The program ended (and every call's signal was cancelled): hands the loop the calls
    /// tool functions started, and drops the queue (those calls never reach a tool).
    pub(super) fn close(&mut self, mut poll: impl FnMut(CallId, CallFuture, Option<CallWake>)) {
        for (id, call, wake) in self.started.drain(..) {
            poll(id, call, Some(wake));
        }
        for (id, call) in self.ready.drain(..) {
            poll(id, call, None);
        }
        self.queue.clear();
    }

    /// Records every call still running as cancelled, timed from its start: their ids and
    /// tools.
    pub(super) fn cancel_running(&mut self) -> Vec<(CallId, Arc<str>)> {
        let mut cancelled = Vec::new();
        for (i, call) in self.calls.iter_mut().enumerate() {
            if let CallState::Running { since } = call.state {
                call.state = CallState::Done {
                    status: CallStatus::Cancelled,
                    ms: since.elapsed().as_millis() as u64,
                };
                cancelled.push((i as CallId + 1, self.tools[call.tool].clone()));
            }
        }
        cancelled
    }

    /// The record of every call that reached a tool, in the order the program made them.
    pub(super) fn records(&self) -> Vec<CallRecord> {
        self.calls
            .iter()
            .filter_map(|call| match call.state {
                CallState::Done { status, ms } => Some(CallRecord {
                    tool: self.tools.get(call.tool).cloned().unwrap_or_default(),
                    status,
                    ms,
                }),
                _ => None,
            })
            .collect()
    }

    fn slot(&mut self, id: CallId) -> Option<&mut Call> {
        self.calls.get_mut((id as usize).checked_sub(1)?)
    }
}

/// How a call's outcome counts in `calls`.
pub(super) fn status_of(outcome: &Outcome) -> CallStatus {
    match outcome.error_kind() {
        None => CallStatus::Ok,
        Some(ErrorKind::Cancelled) => CallStatus::Cancelled,
        Some(_) => CallStatus::Error,
    }
}
