//! The journal of a run that may pause: every call the program made (tool, arguments,
//! outcome), every turn of the event loop (which calls it delivered, which timers it
//! fired), every clock reading and the seed of `Math.random`. QuickJS cannot save its
//! heap, so a paused run resumes by running the program again from the start against its
//! journal: a recorded call gets its recorded outcome without executing, in the same turn
//! as before, and the program reads the same clock and random numbers. A program that asks
//! for anything else than the journal holds (another call, other arguments, a call the
//! journal answers before the program made it) has diverged: the resume stops there, with
//! nothing executed.
//!
//! ```text
//!   recording: call ──> calls[id-1] {tool, arguments}      turn ──> steps += Calls|Timers
//!              outcome ──> calls[id-1].outcome              Date.now, performance.now ──> clock
//!   ask (no approver) ──> awaiting += (id, prompt); the run pauses when the program waits
//!   replay:    call id ──> compare with calls[id-1] ──> recorded outcome, no dispatch
//!              turn ──> steps[k] again             clock ──> clock[j] again
//!              steps used up ──> live: undelivered outcomes delivered, decided calls run
//! ```

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::calls::CallId;
use crate::dispatch::{Approval, ErrorKind, Outcome, ToolError};
use crate::value::json_size;

/// What a paused run recorded, to resume it. Opaque: a host keeps it (see
/// [`PausedRun`](crate::run_code::PausedRun)) and hands it back unchanged; its serde form
/// is stable within a version of this crate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    calls: Vec<JournalCall>,
    steps: Vec<Step>,
    clock: Vec<f64>,
    seed: u64,
}

/// One call as the program made it, and how it ended, if it did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct JournalCall {
    tool: String,
    /// `null` for a call whose arguments could not be read.
    #[serde(default)]
    arguments: Value,
    /// The arguments could not be read: the call failed before it started.
    #[serde(default, skip_serializing_if = "is_false")]
    refused: bool,
    /// The program received the outcome (at once, or in a recorded step).
    #[serde(default, skip_serializing_if = "is_false")]
    delivered: bool,
    /// Settled when the program made it, without a turn of the loop.
    #[serde(default, skip_serializing_if = "is_false")]
    immediate: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    outcome: Option<Recorded>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A call's recorded outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "end", rename_all = "lowercase")]
enum Recorded {
    Value {
        value: Value,
        ms: u64,
    },
    Error {
        kind: String,
        message: String,
        ms: u64,
    },
}

impl Recorded {
    fn of(outcome: Outcome) -> (Recorded, usize) {
        let ms = outcome.elapsed().as_millis() as u64;
        match outcome.result {
            Ok(value) => {
                let size = json_size(&value);
                (Recorded::Value { value, ms }, size)
            }
            Err(error) => {
                let size = error.message().len();
                (
                    Recorded::Error {
                        kind: error.kind().as_str().to_owned(),
                        message: error.message().to_owned(),
                        ms,
                    },
                    size,
                )
            }
        }
    }

    fn outcome(&self, tool: &str) -> Outcome {
        let tool: Arc<str> = Arc::from(tool);
        match self {
            Recorded::Value { value, ms } => {
                Outcome::replayed(tool, Ok(value.clone()), Duration::from_millis(*ms))
            }
            Recorded::Error { kind, message, ms } => Outcome::replayed(
                tool,
                Err(ToolError::with_kind(
                    ErrorKind::parse(kind).unwrap_or(ErrorKind::Failed),
                    message.clone(),
                )),
                Duration::from_millis(*ms),
            ),
        }
    }
}

/// One turn of the event loop after the program's first: the calls whose outcomes it
/// delivered, or the timers it fired, in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Step {
    Calls(Vec<CallId>),
    Timers(Vec<u64>),
}

/// A turn to replay.
pub(super) enum Turn {
    Calls(Vec<(CallId, Outcome)>),
    Timers(Vec<u64>),
}

/// What the program's call `id` gets while its run replays.
pub(super) enum Replayed {
    /// Not replayed: dispatch it (and record it).
    Live,
    /// Its recorded outcome, settled at once as it was.
    Immediate(Box<Outcome>),
    /// A promise that a later turn settles (or the live part, once the journal is used up).
    Later,
}

/// What becomes of a call made while replaying, once the journal is used up.
pub(super) enum GoLive {
    /// It finished while the run paused: the program receives its recorded outcome now.
    Deliver(Outcome),
    /// Dispatch it now, asked or approved.
    Dispatch { arguments: Value, approved: bool },
}

/// The journal of a run in progress: recording, and replaying a journal first when the run
/// resumes one.
pub(crate) struct Recorder {
    journal: Journal,
    /// Bytes of arguments and outcomes recorded; past `max_bytes` the run stops recording
    /// and can no longer pause (`off` says why).
    bytes: usize,
    max_bytes: usize,
    off: Option<String>,
    replay: Option<Replay>,
    /// Calls that are waiting for approval: the run pauses.
    awaiting: Vec<(CallId, String)>,
    /// The run has paused (no JavaScript runs any more).
    paused: bool,
    divergence: Option<String>,
    /// The state of `Math.random` (splitmix64 from the journal's seed).
    random: u64,
    /// The live clock: milliseconds since the epoch at `since`.
    base: (f64, Instant),
}

/// Milliseconds since the epoch now.
pub(super) fn epoch_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

struct Replay {
    /// The next step and the next clock reading to replay.
    step: usize,
    clock: usize,
    /// The decisions on the calls the run paused at.
    decisions: HashMap<CallId, Approval>,
}

impl Recorder {
    /// A recorder for a new run, keeping at most `max_bytes` of arguments and outcomes.
    pub(crate) fn new(max_bytes: usize) -> Self {
        use std::hash::{BuildHasher, Hasher};
        let seed = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        Self::with(
            Journal {
                seed,
                ..Journal::default()
            },
            None,
            max_bytes,
        )
    }

    /// A recorder that replays `journal` first, then applies `decisions` to the calls the
    /// run paused at.
    pub(crate) fn resume(
        journal: Journal,
        decisions: HashMap<CallId, Approval>,
        max_bytes: usize,
    ) -> Self {
        let replay = Replay {
            step: 0,
            clock: 0,
            decisions,
        };
        Self::with(journal, Some(replay), max_bytes)
    }

    fn with(journal: Journal, replay: Option<Replay>, max_bytes: usize) -> Self {
        let bytes = journal
            .calls
            .iter()
            .map(|c| {
                json_size(&c.arguments)
                    + match &c.outcome {
                        Some(Recorded::Value { value, .. }) => json_size(value),
                        Some(Recorded::Error { message, .. }) => message.len(),
                        None => 0,
                    }
            })
            .sum();
        Recorder {
            random: journal.seed,
            journal,
            bytes,
            max_bytes,
            off: None,
            replay,
            awaiting: Vec::new(),
            paused: false,
            divergence: None,
            base: (epoch_ms(), Instant::now()),
        }
    }

    /// Whether calls made now may pause the run (the recorder is on).
    pub(super) fn can_pause(&self) -> bool {
        self.off.is_none()
    }

    /// Whether the run still replays its journal.
    pub(super) fn replaying(&self) -> bool {
        self.replay.is_some()
    }

    /// Why the run diverged from its journal, once it has.
    pub(super) fn divergence(&self) -> Option<&str> {
        self.divergence.as_deref()
    }

    /// Whether calls wait for approval: the run pauses when the program next waits.
    pub(super) fn pausing(&self) -> bool {
        !self.awaiting.is_empty()
    }

    /// The run pauses now.
    pub(super) fn pause(&mut self) {
        self.paused = true;
    }

    /// Whether the run paused.
    pub(super) fn paused(&self) -> bool {
        self.paused
    }

    /// A clock reading, in milliseconds since the epoch: the recorded one while replaying,
    /// else the live one (recorded). The live clock never goes back: it counts from the
    /// run's start on a monotonic clock, and a resumed run's starts after the readings
    /// it replays.
    pub(super) fn clock(&mut self) -> f64 {
        if let Some(replay) = &mut self.replay
            && let Some(&t) = self.journal.clock.get(replay.clock)
        {
            replay.clock += 1;
            return t;
        }
        let last = self.journal.clock.last().copied().unwrap_or(0.0);
        let live = (self.base.0 + self.base.1.elapsed().as_secs_f64() * 1000.0).max(last);
        if self.off.is_none() {
            self.journal.clock.push(live);
            self.bytes += 8;
            self.check_size();
        }
        live
    }

    /// The next `Math.random` value in [0, 1).
    pub(super) fn random(&mut self) -> f64 {
        // splitmix64: the same seed gives the same numbers, replayed or not.
        self.random = self.random.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.random;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Records the divergence (the first one stays).
    pub(super) fn diverge(&mut self, message: String) {
        if self.divergence.is_none() {
            self.divergence = Some(message);
        }
    }

    /// The program made call `id` of `tool` with `arguments`.
    ///
    /// # Errors
    /// While replaying, when the journal holds another call at `id`: the divergence, which
    /// the run also keeps (see [`Recorder::divergence`]).
    pub(super) fn call(
        &mut self,
        id: CallId,
        tool: &str,
        arguments: &Value,
    ) -> Result<Replayed, String> {
        if self.replay.is_some() {
            let Some(recorded) = self.journal.calls.get(index(id)) else {
                let message = format!(
                    "call {id} (tools.{tool}) is one the recorded run did not make before it paused: it made {} call(s)",
                    self.journal.calls.len()
                );
                self.diverge(message.clone());
                return Err(message);
            };
            if recorded.refused || recorded.tool != tool || recorded.arguments != *arguments {
                let message = difference(id, recorded, tool, arguments);
                self.diverge(message.clone());
                return Err(message);
            }
            return Ok(match &recorded.outcome {
                Some(outcome) if recorded.immediate => {
                    Replayed::Immediate(Box::new(outcome.outcome(tool)))
                }
                _ => Replayed::Later,
            });
        }
        if self.off.is_none() {
            self.bytes += json_size(arguments);
            self.journal.calls.push(JournalCall {
                tool: tool.to_owned(),
                arguments: arguments.clone(),
                refused: false,
                delivered: false,
                immediate: false,
                outcome: None,
            });
            self.check_size();
        }
        Ok(Replayed::Live)
    }

    /// The program made call `id` of `tool` with arguments that could not be read.
    ///
    /// # Errors
    /// As [`Recorder::call`].
    pub(super) fn refused(&mut self, id: CallId, tool: &str) -> Result<(), String> {
        if self.replay.is_some() {
            return match self.journal.calls.get(index(id)) {
                Some(recorded) if recorded.refused && recorded.tool == tool => Ok(()),
                Some(recorded) => {
                    let message = format!(
                        "call {id}: the program called tools.{tool} with arguments that could not be read, where the recorded run called tools.{} with {}",
                        recorded.tool,
                        shown(&recorded.arguments)
                    );
                    self.diverge(message.clone());
                    Err(message)
                }
                None => {
                    let message = format!(
                        "call {id} (tools.{tool}) is one the recorded run did not make before it paused"
                    );
                    self.diverge(message.clone());
                    Err(message)
                }
            };
        }
        if self.off.is_none() {
            self.journal.calls.push(JournalCall {
                tool: tool.to_owned(),
                arguments: Value::Null,
                refused: true,
                delivered: true,
                immediate: true,
                outcome: None,
            });
        }
        Ok(())
    }

    /// Call `id` waits for approval (`prompt`): the run pauses.
    pub(super) fn awaits(&mut self, id: CallId, prompt: String) {
        self.awaiting.push((id, prompt));
    }

    /// Call `id` ended with `outcome`; `delivered`: the program received it (`immediate`:
    /// when it made the call). A call made while replaying was recorded already.
    pub(super) fn finished(
        &mut self,
        id: CallId,
        outcome: Outcome,
        delivered: bool,
        immediate: bool,
    ) {
        if self.off.is_some() {
            return;
        }
        let Some(call) = self.journal.calls.get_mut(index(id)) else {
            return;
        };
        call.delivered |= delivered;
        call.immediate |= immediate;
        if call.outcome.is_none() {
            let (recorded, size) = Recorded::of(outcome);
            call.outcome = Some(recorded);
            self.bytes += size;
            self.check_size();
        }
    }

    /// The calls delivered in one turn of the loop, in order.
    pub(super) fn delivered(&mut self, ids: Vec<CallId>) {
        if self.off.is_none() && !ids.is_empty() {
            self.journal.steps.push(Step::Calls(ids));
        }
    }

    /// The timers fired in one turn of the loop, in order.
    pub(super) fn fired(&mut self, ids: Vec<u64>) {
        if self.off.is_none() && !ids.is_empty() {
            self.journal.steps.push(Step::Timers(ids));
        }
    }

    /// The next turn to replay, with the outcomes it delivers; `None` once the journal's
    /// turns are used up. `made`: the calls the program has made so far.
    ///
    /// # Errors
    /// The turn delivers a call the program has not made (it diverged).
    pub(super) fn next_turn(&mut self, made: usize) -> Option<Result<Turn, String>> {
        let replay = self.replay.as_mut()?;
        let step = self.journal.steps.get(replay.step)?.clone();
        replay.step += 1;
        Some(match step {
            Step::Timers(ids) => Ok(Turn::Timers(ids)),
            Step::Calls(ids) => {
                let mut turn = Vec::with_capacity(ids.len());
                for id in ids {
                    let recorded = self.journal.calls.get(index(id));
                    match recorded.and_then(|c| Some((c, c.outcome.as_ref()?))) {
                        Some((call, outcome)) if index(id) < made => {
                            turn.push((id, outcome.outcome(&call.tool)));
                        }
                        _ => {
                            let message = format!(
                                "the recorded run received the result of call {id} at this point, but the program has made only {made} call(s)"
                            );
                            self.diverge(message.clone());
                            return Some(Err(message));
                        }
                    }
                }
                Ok(Turn::Calls(turn))
            }
        })
    }

    /// Ends the replay: what becomes of each call the program made while replaying that
    /// the program has not received, in the order it made them. `made`: the calls it made.
    ///
    /// # Errors
    /// The program made fewer calls than the journal holds (it diverged).
    pub(super) fn go_live(&mut self, made: usize) -> Result<Vec<(CallId, GoLive)>, String> {
        let Some(mut replay) = self.replay.take() else {
            return Ok(Vec::new());
        };
        if made < self.journal.calls.len() {
            let next = &self.journal.calls[made];
            let message = format!(
                "the program made {made} call(s) where the recorded run made {} before it paused; the next was tools.{} with {}",
                self.journal.calls.len(),
                next.tool,
                shown(&next.arguments)
            );
            self.diverge(message.clone());
            return Err(message);
        }
        let mut live = Vec::new();
        for (i, call) in self.journal.calls.iter_mut().enumerate() {
            let id = i as CallId + 1;
            if call.delivered || call.refused {
                continue;
            }
            match (&call.outcome, replay.decisions.remove(&id)) {
                (Some(outcome), _) => {
                    call.delivered = true;
                    live.push((id, GoLive::Deliver(outcome.outcome(&call.tool))));
                }
                (None, Some(Approval::Denied(reason))) => {
                    let error = ToolError::with_kind(ErrorKind::Denied, reason);
                    let outcome = Outcome::replayed(
                        Arc::from(call.tool.as_str()),
                        Err(error),
                        Duration::ZERO,
                    );
                    live.push((id, GoLive::Deliver(outcome)));
                }
                (None, decision) => live.push((
                    id,
                    GoLive::Dispatch {
                        arguments: call.arguments.clone(),
                        approved: decision == Some(Approval::Approved),
                    },
                )),
            }
        }
        Ok(live)
    }

    /// What a paused run keeps: the journal and the calls waiting for approval, with the
    /// arguments of each.
    pub(super) fn into_paused(self) -> (Journal, Vec<(CallId, String, String, Value)>) {
        let awaiting = self
            .awaiting
            .into_iter()
            .filter_map(|(id, prompt)| {
                let call = self.journal.calls.get(index(id))?;
                Some((id, call.tool.clone(), prompt, call.arguments.clone()))
            })
            .collect();
        (self.journal, awaiting)
    }

    /// Past the size bound: stop recording; the run can no longer pause.
    ///
    /// Once a call waits for approval the run is pausing, and what it records until it
    /// pauses (the calls already made, and the outcomes of those in flight) is kept past
    /// the bound: a pause that forgot its journal could never resume.
    fn check_size(&mut self) {
        if self.bytes > self.max_bytes && self.off.is_none() && self.awaiting.is_empty() {
            self.off = Some(format!(
                "the run recorded more than {} bytes of tool arguments, results and clock readings, more than a paused run may keep",
                self.max_bytes
            ));
            self.journal = Journal::default();
        }
    }

    /// Whether the journal will record a result of `size` JSON bytes (so whoever delivers
    /// it must leave a copy for [`Recorder::finished`]). A result that would pass the
    /// bound turns recording off now, as recording it would.
    pub(super) fn keeps(&mut self, size: usize) -> bool {
        if self.off.is_some() {
            return false;
        }
        if self.bytes.saturating_add(size) > self.max_bytes && self.awaiting.is_empty() {
            self.bytes = self.bytes.saturating_add(size);
            self.check_size();
            return false;
        }
        true
    }

    /// Why the run can no longer pause, if it cannot.
    pub(super) fn off(&self) -> Option<&str> {
        self.off.as_deref()
    }
}

fn index(id: CallId) -> usize {
    (id as usize).saturating_sub(1)
}

/// At most this many characters of a value in a divergence message.
const SHOWN: usize = 200;

fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= SHOWN {
        return text;
    }
    let cut: String = text.chars().take(SHOWN).collect();
    format!("{cut}…")
}

/// The first difference between the recorded call and the call the program made.
fn difference(id: CallId, recorded: &JournalCall, tool: &str, arguments: &Value) -> String {
    if recorded.refused {
        return format!(
            "call {id}: the program called tools.{tool} with {}, where the recorded run called tools.{} with arguments that could not be read",
            shown(arguments),
            recorded.tool
        );
    }
    if recorded.tool != tool {
        return format!(
            "call {id}: the program called tools.{tool}, where the recorded run called tools.{} (with {})",
            recorded.tool,
            shown(&recorded.arguments)
        );
    }
    let (path, was, now) = first_difference(&recorded.arguments, arguments, String::new());
    format!(
        "call {id}: the program called tools.{tool} with other arguments than the recorded run: at {} it passed {now} where the recorded run passed {was}",
        if path.is_empty() { "the top" } else { &path }
    )
}

/// Where two JSON values first differ: (JSON Pointer, recorded, now), with a missing side
/// shown as `nothing`.
fn first_difference(was: &Value, now: &Value, path: String) -> (String, String, String) {
    match (was, now) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, x) in a {
                let at = format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"));
                match b.get(key) {
                    Some(y) if x == y => {}
                    Some(y) => return first_difference(x, y, at),
                    None => return (at, shown(x), "nothing".to_owned()),
                }
            }
            for (key, y) in b {
                if !a.contains_key(key) {
                    let at = format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"));
                    return (at, "nothing".to_owned(), shown(y));
                }
            }
            (path, shown(was), shown(now))
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                if x != y {
                    return first_difference(x, y, format!("{path}/{i}"));
                }
            }
            let i = a.len().min(b.len());
            let at = format!("{path}/{i}");
            match (a.get(i), b.get(i)) {
                (Some(x), None) => (at, shown(x), "nothing".to_owned()),
                (None, Some(y)) => (at, "nothing".to_owned(), shown(y)),
                _ => (path, shown(was), shown(now)),
            }
        }
        _ => (path, shown(was), shown(now)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_difference_is_named_by_its_json_pointer() {
        let (at, was, now) = first_difference(
            &json!({"path": "a.txt", "edits": [{"old": "x"}, {"old": "y"}]}),
            &json!({"path": "a.txt", "edits": [{"old": "x"}, {"old": "z"}]}),
            String::new(),
        );
        assert_eq!(
            (at.as_str(), was.as_str(), now.as_str()),
            ("/edits/1/old", "\"y\"", "\"z\"")
        );
        let (at, was, now) =
            first_difference(&json!({"a": 1}), &json!({"a": 1, "b/c": 2}), String::new());
        assert_eq!(
            (at.as_str(), was.as_str(), now.as_str()),
            ("/b~1c", "nothing", "2")
        );
    }

    #[test]
    fn a_result_that_would_pass_the_bound_is_not_kept_and_ends_recording() {
        let mut r = Recorder::new(1000);
        assert!(r.keeps(600));
        r.bytes = 600;
        // 600 + 400 is the bound itself: kept.
        assert!(r.keeps(400));
        assert!(r.off().is_none());
        // One byte more: not kept, and recording ends as recording it would have ended it.
        assert!(!r.keeps(401));
        assert_eq!(
            r.off(),
            Some(
                "the run recorded more than 1000 bytes of tool arguments, results and clock readings, more than a paused run may keep"
            )
        );
        assert!(!r.keeps(1));
        // While a call waits for approval, the journal keeps everything (the run pauses).
        let mut r = Recorder::new(1000);
        r.awaits(1, "write?".to_owned());
        assert!(r.keeps(5000));
        assert!(r.off().is_none());
    }

    #[test]
    fn the_same_seed_gives_the_same_random_numbers() {
        let mut a = Recorder::new(1 << 20);
        let journal = a.journal.clone();
        let first: Vec<f64> = (0..5).map(|_| a.random()).collect();
        let mut b = Recorder::resume(journal, HashMap::new(), 1 << 20);
        let again: Vec<f64> = (0..5).map(|_| b.random()).collect();
        assert_eq!(first, again);
        assert!(first.iter().all(|x| (0.0..1.0).contains(x)));
        assert_ne!(first[0], first[1]);
    }
}
