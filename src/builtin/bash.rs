//! `bash`: a shell command under the root, in a process group of its own.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};

use super::root::Root;
use crate::child::{Group, describe_exit, drain};
use crate::dispatch::{CallCard, ErrorKind, Outcome, ResultCard, Tool, ToolError};
use crate::schema::{Node, ParameterSchema, ValueSchema};

/// Bytes kept of the start, and separately of the end, of each of stdout and stderr.
pub(super) const KEPT_BYTES: usize = 16 << 10;

/// Timeout of a command that gives no `timeout_ms`: 120 000 ms.
pub(super) const DEFAULT_TIMEOUT_MS: u64 = 120_000;

/// The longest `timeout_ms`: 600 000 ms.
pub(super) const MAX_TIMEOUT_MS: u64 = 600_000;

pub(super) fn tool(root: Arc<Root>) -> Tool {
    Tool::builder("bash")
        .annotations(crate::dispatch::ToolAnnotations::writes(true, false).open_world())
        .description("Run a shell command (bash -c) in the root folder or a folder under it. A non-zero exit is a result with its exit_code; stdout and stderr keep their start and end when long.")
        .parameters(ParameterSchema::new([
            (
                "command",
                Node::string().min_length(1).describe("The command line, run by bash -c.").required(),
            ),
            (
                "cwd",
                Node::string().describe("Folder to run in, relative to the root. Default: the root."),
            ),
            (
                "timeout_ms",
                Node::integer()
                    .minimum(1)
                    .maximum(MAX_TIMEOUT_MS)
                    .default_value(DEFAULT_TIMEOUT_MS)
                    .describe("Milliseconds before the command and everything it started are killed."),
            ),
        ]))
        .output(ValueSchema::new(
            Node::object([
                ("stdout", Node::string().required()),
                ("stderr", Node::string().required()),
                (
                    "exit_code",
                    Node::integer().describe("The shell's exit status.").required(),
                ),
            ])
            .additional_properties(false),
        ))
        .render(|_, v| {
            let mut text = String::new();
            for key in ["stdout", "stderr"] {
                let s = v[key].as_str().unwrap_or_default();
                if !s.is_empty() {
                    text.push_str(s);
                    if !s.ends_with('\n') {
                        text.push('\n');
                    }
                }
            }
            text.push_str(&format!("exit code: {}", v["exit_code"]));
            vec![crate::dispatch::Content::text(text)]
        })
        .present_call(|args| CallCard::Terminal {
            command: args["command"].as_str().unwrap_or_default().to_owned(),
            description: None,
            cwd: args.get("cwd").and_then(Value::as_str).map(str::to_owned),
        })
        .present_result(terminal_card)
        .execute(move |args, exec| {
            let root = root.clone();
            async move {
                let command = args.str("command").unwrap_or_default().to_owned();
                let dir = match args.str("cwd") {
                    None => root.path().to_path_buf(),
                    Some(cwd) => {
                        let dir = root.resolve(cwd)?;
                        if !dir.is_dir() {
                            return Err(ToolError::new(format!("cwd {cwd}: not a folder")));
                        }
                        dir
                    }
                };
                let timeout = Duration::from_millis(
                    args.get("timeout_ms")
                        .and_then(Value::as_u64)
                        .unwrap_or(DEFAULT_TIMEOUT_MS)
                        .min(MAX_TIMEOUT_MS),
                );
                run(&command, &dir, timeout, exec.signal()).await
            }
        })
        .build()
        .unwrap_or_else(|e| unreachable!("bash is well defined: {e}"))
}

async fn run(
    command: &str,
    dir: &std::path::Path,
    timeout: Duration,
    signal: &tokio_util::sync::CancellationToken,
) -> Result<Value, ToolError> {
    let args = ["-c".to_owned(), command.to_owned()];
    let mut child = crate::child::command("bash", &args, dir, &BTreeMap::new())
        .spawn()
        .map_err(|e| ToolError::new(format!("could not start bash: {e}")))?;
    let mut group = Group::of(&child);
    drop(child.stdin.take());
    let out = Arc::new(Mutex::new(Bounded::default()));
    let err = Arc::new(Mutex::new(Bounded::default()));
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let readers =
        async { tokio::join!(collect(stdout, out.clone()), collect(stderr, err.clone())) };
    let finished = child.wait();
    enum Ended {
        Done(std::io::Result<std::process::ExitStatus>),
        TimedOut,
        Cancelled,
    }
    let ended = {
        let all = crate::child::ended_with_output(readers, finished);
        tokio::select! {
            status = all => Ended::Done(status),
            () = tokio::time::sleep(timeout) => Ended::TimedOut,
            () = signal.cancelled() => Ended::Cancelled,
        }
    };
    // Whatever the command started in its group ends with it.
    group.kill();
    let text = |b: &Arc<Mutex<Bounded>>| b.lock().unwrap_or_else(PoisonError::into_inner).text();
    let status = match ended {
        Ended::Done(status) => {
            status.map_err(|e| ToolError::new(format!("waiting for the command failed: {e}")))?
        }
        Ended::TimedOut => {
            return Err(ToolError::with_kind(
                ErrorKind::Timeout,
                format!(
                    "the command did not finish within {} ms and was killed; output so far:\n{}{}",
                    timeout.as_millis(),
                    text(&out),
                    text(&err)
                ),
            ));
        }
        Ended::Cancelled => return Err(ToolError::cancelled()),
    };
    let Some(code) = status.code() else {
        return Err(ToolError::new(format!(
            "the command was {}; output so far:\n{}{}",
            describe_exit(&status),
            text(&out),
            text(&err)
        )));
    };
    Ok(json!({"stdout": text(&out), "stderr": text(&err), "exit_code": code}))
}

/// Reads `pipe` to its end into `sink`.
async fn collect(pipe: Option<impl tokio::io::AsyncRead + Unpin>, sink: Arc<Mutex<Bounded>>) {
    if let Some(pipe) = pipe {
        drain(pipe, |chunk| {
            sink.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(chunk);
            true
        })
        .await;
    }
}

/// The start and end of a stream, with the size of what was dropped between them.
#[derive(Default)]
struct Bounded {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl Bounded {
    fn push(&mut self, mut chunk: &[u8]) {
        self.total += chunk.len() as u64;
        if self.head.len() < KEPT_BYTES {
            let take = chunk.len().min(KEPT_BYTES - self.head.len());
            self.head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        self.tail.extend(chunk);
        if self.tail.len() > KEPT_BYTES {
            let over = self.tail.len() - KEPT_BYTES;
            self.tail.drain(..over);
        }
    }

    /// The text kept: head, a `… N bytes dropped …` line when the middle was dropped, tail
    /// (invalid UTF-8 replaced).
    fn text(&self) -> String {
        let dropped = self.total - self.head.len() as u64 - self.tail.len() as u64;
        let (a, b) = self.tail.as_slices();
        let tail = [a, b].concat();
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if dropped > 0 {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("… {dropped} bytes dropped …\n"));
        }
        text.push_str(&String::from_utf8_lossy(&tail));
        text
    }
}

fn terminal_card(_args: &Value, outcome: &Outcome) -> ResultCard {
    match outcome.value() {
        Some(v) => {
            let mut raw = v["stdout"].as_str().unwrap_or_default().to_owned();
            raw.push_str(v["stderr"].as_str().unwrap_or_default());
            ResultCard::Terminal {
                raw_output: raw,
                exit: v["exit_code"].as_i64(),
            }
        }
        None => ResultCard::Terminal {
            raw_output: outcome.text(),
            exit: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_output_keeps_its_start_and_end_and_says_what_was_dropped() {
        let mut b = Bounded::default();
        b.push(&vec![b'a'; KEPT_BYTES]);
        b.push(&[b'b'; 100]);
        b.push(&vec![b'c'; KEPT_BYTES]);
        let text = b.text();
        assert!(text.starts_with(&"a".repeat(KEPT_BYTES)));
        assert!(text.contains("\n… 100 bytes dropped …\n"));
        assert!(text.ends_with(&"c".repeat(KEPT_BYTES)));
        let mut small = Bounded::default();
        small.push(b"hi\n");
        assert_eq!(small.text(), "hi\n");
    }
}
