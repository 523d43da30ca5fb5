//! Presentation cards: what a UI shows for a call and its result.
//!
//! Cards are pure projections: `present_call` receives only the arguments and
//! `present_result` only the arguments and the outcome, so they cannot read files, clocks or
//! randomness through the API. They serialise to JSON with a `card` tag. Arguments that do
//! not fit what a projector expects (malformed or from an older version) fall back to the
//! generic card; a panicking projector falls back too.

use serde::Serialize;
use serde_json::Value;

/// A place in a file a card points to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Location {
    /// Path as the tool received it (relative to the tool's root for built-in tools).
    pub path: String,
    /// 1-based line, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
}

/// The card shown when a call starts.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "card", rename_all = "snake_case")]
#[non_exhaustive]
pub enum CallCard {
    /// Any call: a title, a kind (`read`, `search`, `edit`, `execute`, `fetch`, `other`), the
    /// raw input and the places it touches.
    Generic {
        /// One-line title, e.g. `Read src/lib.rs`.
        title: String,
        /// What sort of work the call does.
        kind: String,
        /// The arguments as given.
        raw_input: Value,
        /// Files the call touches.
        locations: Vec<Location>,
    },
    /// A shell command.
    Terminal {
        /// The command line.
        command: String,
        /// What it is for, when the caller said.
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Working directory.
        #[serde(skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
    },
    /// A file change about to be made.
    Diff {
        /// The file.
        path: String,
        /// The text before, or `None` for a new file.
        old_text: Option<String>,
        /// The text after.
        new_text: String,
    },
}

/// One applied change in a diff result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Hunk {
    /// 1-based first line in the old text.
    pub old_start: u64,
    /// Lines removed.
    pub old_lines: Vec<String>,
    /// 1-based first line in the new text.
    pub new_start: u64,
    /// Lines added.
    pub new_lines: Vec<String>,
}

/// One match of a search result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SearchMatch {
    /// 1-based line number.
    pub line: u64,
    /// The matching line.
    pub text: String,
}

/// The matches in one file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SearchGroup {
    /// The file.
    pub path: String,
    /// Its matches, in line order.
    pub matches: Vec<SearchMatch>,
}

/// The card shown for an outcome.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "card", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ResultCard {
    /// Any outcome: a title and the text.
    Generic {
        /// One-line title.
        title: String,
        /// The text to show.
        text: String,
        /// Whether the call failed.
        is_error: bool,
        /// Files the outcome refers to.
        locations: Vec<Location>,
    },
    /// The output of a command.
    Terminal {
        /// What the command printed.
        raw_output: String,
        /// Its exit status, when it exited.
        #[serde(skip_serializing_if = "Option::is_none")]
        exit: Option<i64>,
    },
    /// A change that was applied.
    Diff {
        /// The file.
        path: String,
        /// The applied hunks, from durable metadata.
        hunks: Vec<Hunk>,
    },
    /// Search results: matches grouped by file, or a flat list of paths.
    Search {
        /// Matches grouped by file (empty for a path list).
        groups: Vec<SearchGroup>,
        /// Matching paths (empty for grouped matches).
        paths: Vec<String>,
        /// Whether the list was cut.
        truncated: bool,
        /// How many matches or paths there were in all.
        total: u64,
    },
    /// A web page fetched, or a web search.
    Web {
        /// `fetch` (a page) or `search`.
        kind: String,
        /// The address.
        url: String,
        /// The page title, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// The text to show.
        text: String,
    },
}

/// What a UI needs to draw a finished call's cards again later, with no file, clock or
/// tool at hand: the tool's name, the arguments and the outcome as recorded. Cards are pure
/// functions of these ([`Tool::present_call`](super::Tool::present_call) of the arguments,
/// [`Tool::present_result`](super::Tool::present_result) of the arguments and
/// [`CardRecord::outcome`]), so a replay gives the same JSON.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct CardRecord {
    /// The tool's name.
    pub tool: String,
    /// The call's arguments.
    pub arguments: Value,
    /// The value of a successful call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// The message of a failed call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The rendered text the model read.
    pub text: String,
    /// The presentation meta.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl CardRecord {
    /// The record of a finished call.
    pub fn of(exec: &super::Exec, outcome: &super::Outcome) -> CardRecord {
        CardRecord {
            tool: outcome.tool().to_owned(),
            arguments: (**exec.arguments()).clone(),
            value: outcome.value().cloned(),
            error: outcome.error_info().map(|e| e.message().to_owned()),
            text: outcome.text(),
            meta: outcome.meta().cloned(),
        }
    }

    /// The outcome as recorded (call id 0, no elapsed time), for
    /// [`Tool::present_result`](super::Tool::present_result).
    pub fn outcome(&self) -> super::Outcome {
        super::Outcome {
            call_id: super::CallId(0),
            tool: self.tool.as_str().into(),
            result: match (&self.value, &self.error) {
                (Some(v), None) => Ok(v.clone()),
                (_, error) => Err(super::ToolError::new(error.clone().unwrap_or_default())),
            },
            content: vec![super::Content::text(self.text.clone())],
            meta: self.meta.clone(),
            context: Vec::new(),
            elapsed: std::time::Duration::ZERO,
        }
    }
}
