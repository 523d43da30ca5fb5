//! What `codemode run` shows while a run goes on: a live status line on a terminal
//! (elapsed time, calls done and in flight, the tools in flight), and with `--verbose` (or
//! `RUST_LOG`) a `tracing` span per call.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use codemode::hooks::Observer;
use codemode::{Exec, Outcome};

/// Set while a question waits on the terminal (`--ask`): the status line keeps off it.
pub(crate) static ASKING: AtomicBool = AtomicBool::new(false);

/// How often the status line is redrawn.
const REDRAW: Duration = Duration::from_millis(100);

/// Before this, a run shows no status line (a quick run leaves nothing to erase).
const QUIET_START: Duration = Duration::from_millis(300);

/// The calls of a run, as the status line counts them (not `run_code` itself).
#[derive(Default)]
struct Counts {
    done: AtomicU64,
    in_flight: Mutex<BTreeMap<u64, String>>,
}

struct CountCalls(Arc<Counts>);

impl Observer for CountCalls {
    fn started(&self, exec: &Exec) {
        if exec.name() != codemode::run_code::RUN_CODE {
            self.0
                .in_flight
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(exec.call_id().get(), exec.name().to_owned());
        }
    }

    fn observe(&self, exec: &Exec, _outcome: &Outcome) {
        if exec.name() != codemode::run_code::RUN_CODE {
            self.0
                .in_flight
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&exec.call_id().get());
            self.0.done.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Set by [`silence`]: no status line is drawn any more.
static SILENT: AtomicBool = AtomicBool::new(false);

/// Whether the status line is on the terminal now: drawn and not erased since.
static DRAWN: AtomicBool = AtomicBool::new(false);

/// Prints `line` and a line end on stderr, on a line of its own: a status line that is
/// drawn is erased first (the next redraw, at most 100 ms later, draws it again below).
pub(crate) fn eprint_line(line: &str) {
    let mut err = std::io::stderr().lock();
    if DRAWN.swap(false, Ordering::SeqCst) {
        let _ = write!(err, "\r\x1b[2K");
    }
    let _ = writeln!(err, "{line}");
    let _ = err.flush();
}

/// Erases the status line and draws none from now on: for a message printed while a run
/// still holds its thread (the process is about to end).
pub(crate) fn silence() {
    let mut err = std::io::stderr().lock();
    if !SILENT.swap(true, Ordering::SeqCst) && std::io::stderr().is_terminal() {
        DRAWN.store(false, Ordering::SeqCst);
        let _ = write!(err, "\r\x1b[2K");
        let _ = err.flush();
    }
}

/// A live status line on stderr, drawn on a thread of its own (a program in a CPU loop
/// holds the run's thread) while it lives and erased when dropped. Nothing is drawn when
/// stderr is not a terminal.
pub(crate) struct StatusLine {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    _observer: codemode::hooks::HookHandle,
}

impl StatusLine {
    /// Starts the line for the calls of `registry`, when stderr is a terminal.
    pub(crate) fn start(registry: &codemode::Registry) -> Option<StatusLine> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let counts = Arc::new(Counts::default());
        let observer = registry.observe(CountCalls(counts.clone()));
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let started = Instant::now();
        let thread = std::thread::Builder::new()
            .name("codemode-status".into())
            .spawn(move || {
                let mut drawn = false;
                while !stopping.load(Ordering::Relaxed) {
                    std::thread::sleep(REDRAW);
                    if started.elapsed() < QUIET_START
                        || stopping.load(Ordering::Relaxed)
                        || ASKING.load(Ordering::Relaxed)
                    {
                        continue;
                    }
                    let width = console::Term::stderr().size_checked().map(|(_, cols)| cols);
                    let line = describe(&counts, started.elapsed(), width);
                    let mut err = std::io::stderr().lock();
                    if SILENT.load(Ordering::SeqCst) {
                        break;
                    }
                    let _ = write!(err, "\r\x1b[2K{line}");
                    let _ = err.flush();
                    DRAWN.store(true, Ordering::SeqCst);
                    drawn = true;
                }
                if drawn {
                    let mut err = std::io::stderr().lock();
                    DRAWN.store(false, Ordering::SeqCst);
                    let _ = write!(err, "\r\x1b[2K");
                    let _ = err.flush();
                }
            })
            .ok()?;
        Some(StatusLine {
            stop,
            thread: Some(thread),
            _observer: observer,
        })
    }
}

impl Drop for StatusLine {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// `codemode: 3.2 s · 12 calls done · 3 in flight: read_file, grep ×2`, cut to fit one row
/// of a terminal `width` columns wide (and at most 100 columns): a line that wrapped could
/// not be erased whole.
fn describe(counts: &Counts, elapsed: Duration, width: Option<u16>) -> String {
    let in_flight = counts
        .in_flight
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .values()
        .cloned()
        .collect::<Vec<_>>();
    let mut tools: BTreeMap<&str, usize> = BTreeMap::new();
    for t in &in_flight {
        *tools.entry(t.as_str()).or_default() += 1;
    }
    let tools: Vec<String> = tools
        .into_iter()
        .map(|(t, n)| {
            if n > 1 {
                format!("{t} ×{n}")
            } else {
                t.to_owned()
            }
        })
        .collect();
    let mut line = format!(
        "codemode: {:.1} s · {} calls done · {} in flight",
        elapsed.as_secs_f64(),
        counts.done.load(Ordering::Relaxed),
        in_flight.len()
    );
    if !tools.is_empty() {
        line.push_str(": ");
        line.push_str(&tools.join(", "));
    }
    // One terminal row, in columns (a wide character takes two): long lists are cut.
    let most = width
        .map_or(100, |cols| usize::from(cols).saturating_sub(1).min(100))
        .max(1);
    console::truncate_str(&line, most, "…").into_owned()
}

/// A `tracing` span per call, named `call`, with `tool`, `call_id`, `parent` (the
/// `run_code` call's token for a call from a program), and, when it ends, `ms` and
/// `outcome` (`ok` or the error kind); closed when the call ends.
pub(crate) struct TraceCalls(Mutex<BTreeMap<u64, tracing::Span>>);

impl TraceCalls {
    pub(crate) fn new() -> TraceCalls {
        TraceCalls(Mutex::new(BTreeMap::new()))
    }
}

impl Observer for TraceCalls {
    fn started(&self, exec: &Exec) {
        let span = tracing::info_span!(
            "call",
            tool = exec.name(),
            call_id = exec.call_id().get(),
            token = %exec.token(),
            parent = exec.parent().map(|p| p.to_string()).unwrap_or_default(),
            ms = tracing::field::Empty,
            outcome = tracing::field::Empty,
        );
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(exec.call_id().get(), span);
    }

    fn observe(&self, exec: &Exec, outcome: &Outcome) {
        let span = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&exec.call_id().get());
        if let Some(span) = span {
            span.record("ms", outcome.elapsed().as_millis() as u64);
            span.record("outcome", outcome.error_kind().map_or("ok", |k| k.as_str()));
            // Closing the span reports it (with its fields) to the subscriber.
            drop(span);
        }
    }
}

/// Sends `tracing` output to stderr: the `RUST_LOG` filter when set, else with `verbose`
/// every call span (`codemode=info`). Without either, nothing is installed.
pub(crate) fn init_tracing(verbose: bool) {
    let from_env = std::env::var_os("RUST_LOG").is_some();
    if !verbose && !from_env {
        return;
    }
    let filter = if from_env {
        tracing_subscriber::EnvFilter::from_default_env()
    } else {
        tracing_subscriber::EnvFilter::new("codemode=info")
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_target(false)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_line_fits_one_row_of_the_terminal() {
        let counts = Counts::default();
        counts
            .in_flight
            .lock()
            .unwrap()
            .extend((0..3).map(|i| (i, format!("a_rather_long_tool_name_{i}"))));
        let elapsed = Duration::from_millis(3_200);
        let full = "codemode: 3.2 s · 0 calls done · 3 in flight: a_rather_long_tool_name_0, a_rather_long_tool_name_1, a_rather_long_tool_name_2";
        // At most 100 characters without a known width, or on a wide terminal.
        let cut = |n: usize| full.chars().take(n - 1).collect::<String>() + "…";
        assert_eq!(describe(&counts, elapsed, None), cut(100));
        assert_eq!(describe(&counts, elapsed, Some(300)), cut(100));
        // One column short of the width: the cursor stays on the row.
        assert_eq!(describe(&counts, elapsed, Some(40)), cut(39));
        assert_eq!(describe(&counts, elapsed, Some(2)), "…");
        assert_eq!(describe(&counts, elapsed, Some(0)), "…");
        // Wide characters take two columns each.
        counts.in_flight.lock().unwrap().clear();
        counts
            .in_flight
            .lock()
            .unwrap()
            .insert(0, "工具".repeat(20));
        let wide = describe(&counts, elapsed, Some(60));
        assert_eq!(console::measure_text_width(&wide), 59, "{wide}");
        assert!(wide.ends_with("工具工具…"), "{wide}");
        counts.in_flight.lock().unwrap().clear();
        assert_eq!(
            describe(&counts, elapsed, Some(80)),
            "codemode: 3.2 s · 0 calls done · 0 in flight"
        );
    }
}
