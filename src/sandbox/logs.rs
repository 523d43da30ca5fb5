//! Console capture, bounded while the program runs (the README's "Output cap and spill"
//! says what the model sees of it).
//!
//! Memory stays bounded however much a program logs: the capture keeps the first lines
//! (the head) and the last lines (the tail, a ring) up to a byte budget each, and counts
//! what falls between. When a [`LogSink`] is given, every line also streams to it as soon
//! as the head is full (the head lines first), so nothing is lost: `run_code` streams to
//! its spill file. Past `disk_limit` bytes in all, the run is ended with a clear error.

use std::collections::VecDeque;

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

/// Where every console line goes once the in-memory head is full.
pub(crate) trait LogSink: Send + Sync {
    /// Writes one line.
    ///
    /// # Errors
    /// An I/O error ends the streaming (the capture keeps its head and tail).
    fn write_line(&mut self, level: LogLevel, text: &str) -> std::io::Result<()>;
}

/// The lines a run kept in memory, and what it dropped between them.
#[derive(Debug, Default)]
pub(crate) struct CapturedLogs {
    pub(crate) head: Vec<LogEntry>,
    pub(crate) tail: Vec<LogEntry>,
    /// Console lines between head and tail that are not in memory.
    pub(crate) dropped_entries: usize,
    /// Characters (Unicode scalar values) of their text.
    pub(crate) dropped_chars: usize,
    /// Line breaks inside their text (each entry is one line more).
    pub(crate) dropped_newlines: usize,
    /// Whether every line also went to the sink (nothing is lost).
    pub(crate) streamed: bool,
    /// Bytes of console output in all, one more per line for its line break (what
    /// `Limits::max_console_bytes` bounds).
    pub(crate) total_bytes: u64,
}

/// Keeps the head and tail of the console output and streams everything to a sink.
pub(crate) struct LogCapture {
    head: Vec<LogEntry>,
    head_bytes: usize,
    tail: VecDeque<LogEntry>,
    tail_bytes: usize,
    /// Bytes the head, and separately the tail, may hold.
    budget: usize,
    dropped_entries: usize,
    dropped_chars: usize,
    dropped_newlines: usize,
    total_bytes: u64,
    disk_limit: u64,
    sink: Option<Box<dyn LogSink>>,
    streaming: bool,
    sink_failed: bool,
    /// Set once the output passed `disk_limit`: the run must end.
    pub(crate) over_limit: bool,
    /// A background run's live output: every line as it is written (`job_output` reads it).
    pub(crate) tap: Option<std::sync::Arc<crate::dispatch::jobs::OutputBuffer>>,
}

impl Default for LogCapture {
    fn default() -> Self {
        LogCapture::new(1 << 20, u64::MAX, None)
    }
}

impl std::fmt::Debug for LogCapture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogCapture")
            .field("head", &self.head.len())
            .field("tail", &self.tail.len())
            .field("total_bytes", &self.total_bytes)
            .finish_non_exhaustive()
    }
}

impl LogCapture {
    /// A capture keeping `budget` bytes of head and of tail in memory, ending the run past
    /// `disk_limit` bytes, streaming to `sink` once the head is full.
    pub(crate) fn new(budget: usize, disk_limit: u64, sink: Option<Box<dyn LogSink>>) -> Self {
        LogCapture {
            head: Vec::new(),
            head_bytes: 0,
            tail: VecDeque::new(),
            tail_bytes: 0,
            budget,
            dropped_entries: 0,
            dropped_chars: 0,
            dropped_newlines: 0,
            total_bytes: 0,
            disk_limit,
            sink,
            streaming: false,
            sink_failed: false,
            over_limit: false,
            tap: None,
        }
    }

    pub(crate) fn push(&mut self, level: LogLevel, text: String) {
        if self.over_limit {
            return;
        }
        self.total_bytes += text.len() as u64 + 1;
        if self.total_bytes > self.disk_limit {
            self.over_limit = true;
            return;
        }
        if let Some(tap) = &self.tap {
            tap_line(tap, level, &text);
        }
        if !self.streaming && self.head_bytes + text.len() <= self.budget && self.tail.is_empty() {
            self.head_bytes += text.len();
            self.head.push(LogEntry { level, text });
            return;
        }
        if !self.streaming {
            self.streaming = true;
            self.replay_head();
        }
        if let Some(sink) = self.sink.as_mut()
            && !self.sink_failed
            && sink.write_line(level, &text).is_err()
        {
            self.sink_failed = true;
        }
        self.tail_bytes += text.len();
        self.tail.push_back(LogEntry { level, text });
        while self.tail_bytes > self.budget && self.tail.len() > 1 {
            if let Some(old) = self.tail.pop_front() {
                self.tail_bytes -= old.text.len();
                self.dropped_entries += 1;
                self.dropped_chars += old.text.chars().count();
                self.dropped_newlines += old.text.bytes().filter(|&b| b == b'\n').count();
            }
        }
    }

    fn replay_head(&mut self) {
        if let Some(sink) = self.sink.as_mut() {
            for line in &self.head {
                if sink.write_line(line.level, &line.text).is_err() {
                    self.sink_failed = true;
                    break;
                }
            }
        }
    }

    /// The lines kept in memory, oldest first.
    pub(crate) fn finish(self) -> CapturedLogs {
        CapturedLogs {
            head: self.head,
            tail: self.tail.into_iter().collect(),
            dropped_entries: self.dropped_entries,
            dropped_chars: self.dropped_chars,
            dropped_newlines: self.dropped_newlines,
            streamed: self.streaming && self.sink.is_some() && !self.sink_failed,
            total_bytes: self.total_bytes,
        }
    }
}

/// Writes a console line to a live output buffer: `text` for `log`, `[level] text` for
/// the others, one line each.
fn tap_line(tap: &crate::dispatch::jobs::OutputBuffer, level: LogLevel, text: &str) {
    let line = match level {
        LogLevel::Log => format!("{text}\n"),
        other => format!("[{}] {text}\n", other.as_str()),
    };
    tap.push(&line);
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    struct Collect(Arc<Mutex<Vec<String>>>);

    impl LogSink for Collect {
        fn write_line(&mut self, _level: LogLevel, text: &str) -> std::io::Result<()> {
            self.0.lock().unwrap().push(text.to_owned());
            Ok(())
        }
    }

    #[test]
    fn a_flood_keeps_head_and_tail_and_streams_everything() {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let mut c = LogCapture::new(20, u64::MAX, Some(Box::new(Collect(lines.clone()))));
        for i in 0..100 {
            c.push(LogLevel::Log, format!("line {i:02}"));
        }
        let kept = c.finish();
        let head: Vec<&str> = kept.head.iter().map(|e| e.text.as_str()).collect();
        let tail: Vec<&str> = kept.tail.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(head, ["line 00", "line 01"]);
        assert_eq!(tail, ["line 98", "line 99"]);
        assert_eq!(kept.dropped_entries, 96);
        assert_eq!(kept.dropped_chars, 96 * 7);
        assert!(kept.streamed);
        assert_eq!(
            lines.lock().unwrap().len(),
            100,
            "the sink got every line, in order"
        );
        assert_eq!(lines.lock().unwrap()[3], "line 03");
    }

    #[test]
    fn past_the_disk_limit_the_capture_says_so() {
        let mut c = LogCapture::new(10, 50, None);
        for _ in 0..10 {
            c.push(LogLevel::Log, "0123456789".into());
        }
        assert!(c.over_limit);
    }
}
