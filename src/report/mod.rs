//! The run report: one self-contained HTML file that shows what a run did (README, "Run
//! reports").
//!
//! A [`RunRecorder`] is an [`Observer`]: registered on the registry before a run, it
//! records every call that starts (its tool, arguments, parent, start time and call card)
//! and every outcome (end time, status, result card, error), and what the run used
//! ([`RunUsage`]). [`RunRecorder::finish`] joins that with the program text, the run's
//! canonical value and the limits into a [`RecordedRun`]; [`render_html`] writes it out.
//!
//! What a report holds is bounded: every string of a call's arguments, cards and error is
//! cut at [`MAX_STRING`] characters, every array or object at [`MAX_ITEMS`] members, and
//! each of them as a whole at [`MAX_DETAIL`] bytes as it takes in the page, with a marker
//! saying how much was left out (a cut array becomes `{"items", "left_out"}`); past
//! [`DETAIL_BUDGET`] bytes of such details, later calls keep only their tool, timing and
//! outcome. The program's result and console lines are the run's canonical value, which
//! `run_code` has already capped as the model's preview: the report never holds more of
//! them than the spill file does.

mod html;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use serde::Serialize;
use serde_json::{Map, Value};

pub use html::{MAX_ROWS, render_html};

use crate::dispatch::{CallToken, ErrorKind, Exec, Observer, Outcome, RunUsage};
use crate::run_code::Limits;

/// Most characters of one string kept in a call's arguments or cards.
pub const MAX_STRING: usize = 4_000;
/// Most members of one array or object kept in a call's arguments or cards.
pub const MAX_ITEMS: usize = 200;
/// Bytes of call details (arguments, cards and errors, as JSON in the page) a report keeps
/// in all: 4 MiB.
pub const DETAIL_BUDGET: usize = 4 << 20;
/// Most bytes one detail (a call's arguments, one of its cards, its error) takes in the
/// page: 64 KiB.
pub const MAX_DETAIL: usize = 64 << 10;

/// Records the calls of a run for its report: register it with
/// [`Registry::observe`](crate::Registry::observe) before the run, then
/// [`finish`](RunRecorder::finish) it. Cheap to clone: clones share one record.
#[derive(Clone, Default)]
pub struct RunRecorder {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    origin: Option<Instant>,
    calls: Vec<RecordedCall>,
    by_token: HashMap<CallToken, usize>,
    detail_bytes: usize,
    usage: Option<RunUsage>,
}

/// How a recorded call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum RecordedStatus {
    /// It succeeded.
    Ok,
    /// It failed.
    Error,
    /// It was cancelled (the program ended, a deadline, the outer call cancelled).
    Cancelled,
    /// It waits for a decision: the run paused at it.
    Paused,
    /// It had not ended when the report was made.
    Running,
}

/// One call of a recorded run.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RecordedCall {
    /// Its call id in the registry.
    pub id: u64,
    /// The index in [`RecordedRun::calls`] of the call that made it (the `run_code` call
    /// for a program's calls), when that call is recorded.
    pub parent: Option<usize>,
    /// The tool's name.
    pub tool: String,
    /// Microseconds from the first recorded call's start to this call's start.
    pub start_us: u64,
    /// Microseconds from the first recorded call's start to this call's end; `None` while
    /// it runs.
    pub end_us: Option<u64>,
    /// How it ended.
    pub status: RecordedStatus,
    /// Its arguments, cut (`None` past the detail budget).
    pub arguments: Option<Value>,
    /// The card shown when it started ([`CallCard`](crate::cards::CallCard) as JSON), cut.
    pub call_card: Option<Value>,
    /// The card of its outcome ([`ResultCard`](crate::cards::ResultCard) as JSON), cut.
    pub result_card: Option<Value>,
    /// The failure's message, for a call that failed (cut; `None` past the detail budget).
    pub error: Option<String>,
    /// Whether its details were left out because the report's detail budget was spent.
    pub details_left_out: bool,
}

/// Everything a report shows: made by [`RunRecorder::finish`], drawn by [`render_html`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RecordedRun {
    /// What the report is of, for its title (the program's file name, say).
    pub title: String,
    /// The program text as the model wrote it.
    pub program: String,
    /// The run's canonical value (`run_code`'s result: status, result or error, logs,
    /// calls, spill).
    pub output: Value,
    /// Every recorded call, in the order they started.
    pub calls: Vec<RecordedCall>,
    /// What the run used, when the run reported it.
    pub usage: Option<RunUsage>,
    /// The limits the run ran under.
    pub limits: Limits,
    /// The output cap in characters (`RunCodeConfig::output_cap`).
    pub output_cap: usize,
}

impl RunRecorder {
    /// A recorder with nothing recorded.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The recorded run, taken out of the recorder (which starts afresh): the calls so far
    /// (a call still running is [`RecordedStatus::Running`]), with the program text, the
    /// run's canonical value (`output`: its final value, for a run that went on as a job),
    /// its limits and its output cap in characters. A `run_code` call that answered
    /// `running` (it went on as a job), or has not answered while `output` is final (its
    /// caller stopped waiting for it), takes the status of `output`; the latter ends now.
    pub fn finish(
        &self,
        title: impl Into<String>,
        program: impl Into<String>,
        output: Value,
        limits: Limits,
        output_cap: usize,
    ) -> RecordedRun {
        let mut st = self.lock();
        let mut calls = std::mem::take(&mut st.calls);
        st.by_token.clear();
        // A run that went on as a job ended as its final value says, and so does a run its
        // caller stopped waiting for (it had not stopped past its timeout): it ends now.
        let status = match output.get("status").and_then(Value::as_str) {
            Some("ok") => RecordedStatus::Ok,
            Some("paused") => RecordedStatus::Paused,
            Some("running") => RecordedStatus::Running,
            _ => RecordedStatus::Error,
        };
        let now = st.micros();
        for call in &mut calls {
            if call.status != RecordedStatus::Running {
                continue;
            }
            if call.end_us.is_some() {
                call.status = status;
            } else if call.parent.is_none()
                && runs_programs(&call.tool)
                && status != RecordedStatus::Running
            {
                call.end_us = Some(now);
                call.status = status;
            }
        }
        RecordedRun {
            title: title.into(),
            program: program.into(),
            output,
            calls,
            usage: st.usage.take(),
            limits,
            output_cap,
        }
    }
}

impl State {
    fn micros(&mut self) -> u64 {
        let origin = *self.origin.get_or_insert_with(Instant::now);
        u64::try_from(origin.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    fn spent(&self) -> bool {
        self.detail_bytes >= DETAIL_BUDGET
    }

    /// `value` cut, or `None` once the detail budget is spent; counts what it keeps as the
    /// bytes it takes in the page.
    fn detail(&mut self, value: &Value) -> Option<Value> {
        if self.spent() {
            return None;
        }
        let cut = cut(value);
        self.detail_bytes += serde_json::to_string(&cut).map_or(0, |s| page_bytes(&s));
        Some(cut)
    }
}

/// Bytes `json` takes in the page's data block, where `<`, `>` and `&` take six bytes
/// each and U+2028 and U+2029 take six instead of three.
pub(crate) fn page_bytes(json: &str) -> usize {
    json.len()
        + json
            .chars()
            .map(|c| match c {
                '<' | '>' | '&' => 5,
                '\u{2028}' | '\u{2029}' => 3,
                _ => 0,
            })
            .sum::<usize>()
}

/// Whether `tool` is a tool that runs programs, whose call succeeds whatever its program
/// did.
fn runs_programs(tool: &str) -> bool {
    [crate::run_code::RUN_CODE, crate::run_code::RUN_CODE_RESUME].contains(&tool)
}

impl Observer for RunRecorder {
    fn started(&self, exec: &Exec) {
        let mut st = self.lock();
        let start_us = st.micros();
        let parent = exec.parent().and_then(|p| st.by_token.get(&p).copied());
        let arguments = st.detail(exec.arguments());
        let call_card = if arguments.is_some() {
            exec.registry()
                .and_then(|r| r.get(exec.name()))
                .and_then(|tool| serde_json::to_value(tool.present_call(exec.arguments())).ok())
                .and_then(|card| st.detail(&card))
        } else {
            None
        };
        let index = st.calls.len();
        st.by_token.insert(exec.token(), index);
        st.calls.push(RecordedCall {
            id: exec.call_id().get(),
            parent,
            tool: exec.name().to_owned(),
            start_us,
            end_us: None,
            status: RecordedStatus::Running,
            details_left_out: arguments.is_none(),
            arguments,
            call_card,
            result_card: None,
            error: None,
        });
    }

    fn observe(&self, exec: &Exec, outcome: &Outcome) {
        // A run's call succeeds whatever its program did: its bar shows how the program
        // ended, or that it goes on as a background job (`yield_after_ms`).
        let program = outcome
            .value()
            .filter(|_| runs_programs(exec.name()))
            .and_then(|v| v.get("status"))
            .and_then(Value::as_str);
        let status = match outcome.error_kind() {
            None if program == Some("error") => RecordedStatus::Error,
            None if program == Some("paused") => RecordedStatus::Paused,
            None if program == Some("running") => RecordedStatus::Running,
            None => RecordedStatus::Ok,
            Some(ErrorKind::NeedsApproval) => RecordedStatus::Paused,
            Some(ErrorKind::Cancelled) => RecordedStatus::Cancelled,
            Some(_) => RecordedStatus::Error,
        };
        let mut st = self.lock();
        let end_us = st.micros();
        let Some(&index) = st.by_token.get(&exec.token()) else {
            return;
        };
        if status == RecordedStatus::Running {
            // The run went on as a job: its end comes with `run_finished`.
            return;
        }
        let keep = !st.calls[index].details_left_out;
        let result_card = if keep {
            exec.registry()
                .and_then(|r| r.get(exec.name()))
                .and_then(|tool| {
                    serde_json::to_value(tool.present_result(exec.arguments(), outcome)).ok()
                })
                .and_then(|card| st.detail(&card))
        } else {
            None
        };
        let error = match outcome.error_info() {
            Some(e) if keep => st.detail(&Value::String(e.message().to_owned())),
            _ => None,
        };
        let call = &mut st.calls[index];
        call.end_us = Some(call.end_us.map_or(end_us, |e| e.max(end_us)));
        call.status = status;
        call.result_card = result_card;
        call.error = error.and_then(|e| e.as_str().map(str::to_owned));
    }

    fn run_finished(&self, exec: &Exec, usage: &RunUsage) {
        let mut st = self.lock();
        let end_us = st.micros();
        st.usage = Some(usage.clone());
        // A run that went on as a job ends here, after its call answered.
        if let Some(&index) = st.by_token.get(&exec.token())
            && st.calls[index].status == RecordedStatus::Running
        {
            st.calls[index].end_us = Some(end_us);
        }
    }
}

/// What a detail keeps of `value`: see [`Cutter`].
fn cut(value: &Value) -> Value {
    Cutter { left: MAX_DETAIL }.value(value)
}

/// Cuts a value to what a report keeps of it: every string at [`MAX_STRING`] characters,
/// every array or object at [`MAX_ITEMS`] members, and the whole at [`MAX_DETAIL`] bytes as
/// it takes in the page (`left`, counted down). A cut string ends with
/// `… [cut: N more characters]`; a cut array becomes `{"items": [...], "left_out": N}` (no
/// list a card holds is an object, so this cannot be mistaken for one); a cut object gets a
/// last member `"…": "[cut: N more members]"`.
struct Cutter {
    left: usize,
}

impl Cutter {
    fn value(&mut self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.text(s)),
            Value::Array(items) => {
                let mut kept = Vec::new();
                for item in items {
                    if kept.len() == MAX_ITEMS || self.left == 0 {
                        break;
                    }
                    kept.push(self.value(item));
                }
                let left_out = items.len() - kept.len();
                if left_out == 0 {
                    Value::Array(kept)
                } else {
                    serde_json::json!({"items": kept, "left_out": left_out})
                }
            }
            Value::Object(members) => {
                let mut kept = Map::new();
                let mut taken = 0;
                for (k, v) in members {
                    if taken == MAX_ITEMS || self.left == 0 {
                        break;
                    }
                    let key = self.text(k);
                    let v = self.value(v);
                    kept.insert(key, v);
                    taken += 1;
                }
                if taken < members.len() {
                    kept.insert(
                        "…".to_owned(),
                        Value::String(format!("[cut: {} more members]", members.len() - taken)),
                    );
                }
                Value::Object(kept)
            }
            other => {
                self.left = self.left.saturating_sub(8);
                other.clone()
            }
        }
    }

    fn text(&mut self, text: &str) -> String {
        let mut end = 0;
        for (count, (at, c)) in text.char_indices().enumerate() {
            let cost = char_page_bytes(c);
            if count == MAX_STRING || cost > self.left {
                break;
            }
            self.left -= cost;
            end = at + c.len_utf8();
        }
        self.left = self.left.saturating_sub(2);
        if end == text.len() {
            text.to_owned()
        } else {
            let more = text[end..].chars().count();
            format!("{}… [cut: {more} more characters]", &text[..end])
        }
    }
}

/// Bytes `c` takes inside a JSON string in the page's data block.
fn char_page_bytes(c: char) -> usize {
    match c {
        '<' | '>' | '&' | '\u{2028}' | '\u{2029}' | '\u{0}'..='\u{1f}' => 6,
        '"' | '\\' => 2,
        c => c.len_utf8(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_strings_and_lists_are_cut_with_a_marker() {
        let long = "é".repeat(MAX_STRING + 5);
        let value = json!({"s": long, "a": (0..MAX_ITEMS + 3).collect::<Vec<_>>()});
        let c = cut(&value);
        assert_eq!(
            c["s"].as_str().unwrap(),
            format!("{}… [cut: 5 more characters]", "é".repeat(MAX_STRING))
        );
        assert_eq!(c["a"]["items"].as_array().unwrap().len(), MAX_ITEMS);
        assert_eq!(c["a"]["left_out"], 3);
        assert_eq!(cut(&json!(["short"])), json!(["short"]));
    }

    #[test]
    fn one_detail_is_bounded_however_it_nests() {
        // 200 × 200 strings of 100 `<`: 24 MB in the page uncut.
        let row: Vec<String> = vec!["<".repeat(100); 200];
        let value = json!(vec![row; 200]);
        let c = cut(&value);
        let bytes = page_bytes(&serde_json::to_string(&c).unwrap());
        assert!(bytes <= MAX_DETAIL + 1_000, "{bytes}");
        assert!(c["left_out"].as_u64().unwrap() > 150, "{}", c["left_out"]);
    }
}
