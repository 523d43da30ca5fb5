//! The normalised outcome of a call.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::call::CallId;
use super::tool::{ErrorKind, ToolError};

/// One piece of model-facing content.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Content {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 data.
        data: String,
        /// MIME type, e.g. `image/png`.
        mime_type: String,
    },
}

impl Content {
    /// Text content.
    pub fn text(text: impl Into<String>) -> Content {
        Content::Text { text: text.into() }
    }

    /// The text, for text content.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text { text } => Some(text),
            _ => None,
        }
    }
}

impl From<&str> for Content {
    fn from(s: &str) -> Self {
        Content::text(s)
    }
}

impl From<String> for Content {
    fn from(s: String) -> Self {
        Content::text(s)
    }
}

/// What a call produced, after the whole pipeline: the canonical JSON value or the error,
/// the rendered content, presentation metadata and attached context. Observers receive it
/// read-only.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub(crate) call_id: CallId,
    pub(crate) tool: Arc<str>,
    pub(crate) result: Result<Value, ToolError>,
    pub(crate) content: Vec<Content>,
    pub(crate) meta: Option<Value>,
    pub(crate) context: Vec<Content>,
    pub(crate) elapsed: Duration,
}

impl Outcome {
    pub(crate) fn error(call_id: CallId, tool: Arc<str>, error: ToolError) -> Outcome {
        Outcome {
            call_id,
            tool,
            content: vec![Content::text(error.message().to_owned())],
            result: Err(error),
            meta: None,
            context: Vec::new(),
            elapsed: Duration::ZERO,
        }
    }

    /// The outcome a paused run recorded for a call of `tool`, given again when the run
    /// resumes (no call was made now: the id is 0, the content its text).
    pub(crate) fn replayed(
        tool: Arc<str>,
        result: Result<Value, ToolError>,
        elapsed: Duration,
    ) -> Outcome {
        Outcome {
            call_id: CallId(0),
            tool,
            content: Vec::new(),
            result,
            meta: None,
            context: Vec::new(),
            elapsed,
        }
    }

    /// The call's id.
    pub fn call_id(&self) -> CallId {
        self.call_id
    }

    /// The called tool's name.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// Whether the call failed.
    pub fn is_error(&self) -> bool {
        self.result.is_err()
    }

    /// The canonical value of a successful call.
    pub fn value(&self) -> Option<&Value> {
        self.result.as_ref().ok()
    }

    /// The error of a failed call.
    pub fn error_info(&self) -> Option<&ToolError> {
        self.result.as_ref().err()
    }

    /// The error kind of a failed call.
    pub fn error_kind(&self) -> Option<ErrorKind> {
        self.result.as_ref().err().map(ToolError::kind)
    }

    /// The value or the error, by reference.
    pub fn result(&self) -> Result<&Value, &ToolError> {
        self.result.as_ref()
    }

    /// Takes the value or the error.
    pub fn into_result(self) -> Result<Value, ToolError> {
        self.result
    }

    /// Model-facing content: the rendered value, or the error message. Empty for nested
    /// calls from `run_code`, which skip rendering.
    pub fn content(&self) -> &[Content] {
        &self.content
    }

    /// The model-facing text: every text content joined by newlines, then the attached
    /// context.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for c in self.content.iter().chain(&self.context) {
            if let Some(t) = c.as_text() {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(t);
            }
        }
        out
    }

    /// Durable presentation metadata (`presentation_meta`), when the tool has a projector
    /// and the call was not nested.
    pub fn meta(&self) -> Option<&Value> {
        self.meta.as_ref()
    }

    /// Model-facing context attached by `post_execute` listeners.
    pub fn context(&self) -> &[Content] {
        &self.context
    }

    /// Wall-clock time from the start of dispatch to the end of post-processing.
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }
}
