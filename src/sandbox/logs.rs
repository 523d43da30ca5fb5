//! Console capture, bounded while the program runs (DESIGN §5 "Console").

use serde::Serialize;

/// The console method a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// `console.log` (and `console.dir`).
    Log,
    /// `console.info`.
    Info,
    /// `console.debug`.
    Debug,
    /// `console.warn`.
    Warn,
    /// `console.error`.
    Error,
}

impl LogLevel {
    /// The console method's name.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Log => "log",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
        }
    }

    pub(crate) fn parse(s: &str) -> LogLevel {
        match s {
            "info" => LogLevel::Info,
            "debug" => LogLevel::Debug,
            "warn" => LogLevel::Warn,
            "error" => LogLevel::Error,
            _ => LogLevel::Log,
        }
    }
}

/// One captured console line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LogEntry {
    /// Which console method.
    pub level: LogLevel,
    /// The formatted text.
    pub text: String,
}

/// Keeps console lines up to a byte budget and counts what it drops.
#[derive(Debug, Default)]
pub(crate) struct LogCapture {
    pub(crate) entries: Vec<LogEntry>,
    bytes: usize,
    max_bytes: usize,
    pub(crate) dropped_lines: usize,
    pub(crate) dropped_bytes: usize,
}

impl LogCapture {
    pub(crate) fn new(max_bytes: usize) -> Self {
        LogCapture {
            max_bytes,
            ..Default::default()
        }
    }

    pub(crate) fn push(&mut self, level: LogLevel, text: String) {
        if self.bytes + text.len() > self.max_bytes {
            self.dropped_lines += 1;
            self.dropped_bytes += text.len();
            return;
        }
        self.bytes += text.len();
        self.entries.push(LogEntry { level, text });
    }

    /// The lines, with a closing note when some were dropped.
    pub(crate) fn finish(mut self) -> Vec<LogEntry> {
        if self.dropped_lines > 0 {
            self.entries.push(LogEntry {
                level: LogLevel::Warn,
                text: format!(
                    "… {} more console line(s) ({} bytes) were dropped: the capture keeps {} bytes",
                    self.dropped_lines, self.dropped_bytes, self.max_bytes
                ),
            });
        }
        self.entries
    }
}
