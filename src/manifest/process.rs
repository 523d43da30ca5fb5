//! One call of a command-backed tool: a process per call.
//!
//! - The command runs in the manifest's folder, in a process group of its own, with the
//!   environment cleared except [`ENV_ALLOW_LIST`] and the tool's `env`.
//! - The validated arguments are written to stdin as JSON, then stdin is closed; stdout and
//!   stderr are read at the same time, so a tool that never reads its input, or that
//!   writes much to stderr first, cannot deadlock the call.
//! - stdout must be one JSON value (big integers stay exact) of at most
//!   [`MAX_STDOUT_BYTES`] (past it the group is killed at once); exit 0 is success. Any other exit, death by a signal, output
//!   that is not JSON (or, in the pipeline, fails the output schema) is a tool error naming
//!   the tool, with the last [`MAX_STDERR_SHOWN`] bytes of stderr.
//! - When the command exits, when the tool's timeout passes, when the call's signal is
//!   cancelled, or when the call is dropped, the whole process group is killed
//!   (`SIGKILL`): nothing a call started in its group outlives it. A process that left the
//!   group (`setsid`) escapes; holding the output pipes open, it delays the call by
//!   [`PIPE_GRACE`](crate::child::PIPE_GRACE) at most.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio::io::AsyncWriteExt;

use super::CommandTool;
pub use crate::child::{ENV_ALLOW_LIST, MAX_STDERR_SHOWN};
use crate::child::{Group, Tail, describe_exit, drain};
use crate::dispatch::{Arguments, BuildError, ErrorKind, Exec, Tool, ToolError};

/// Most bytes a command may print on stdout: 64 MiB.
pub const MAX_STDOUT_BYTES: usize = 64 << 20;

/// How long a killed command is waited for, to reap it.
const REAP_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// Bytes of stdout quoted when it is not JSON.
const STDOUT_SHOWN: usize = 200;

pub(super) fn tool(def: Arc<CommandTool>) -> Result<Tool, BuildError> {
    let run_def = def.clone();
    Tool::builder(def.name.clone())
        .description(def.description.clone())
        .parameters(def.parameters.clone())
        .output(def.output.clone())
        .run_in_background(def.run_in_background)
        .annotations(def.annotations.clone())
        .execute(move |args: Arguments, exec: Exec| {
            let def = run_def.clone();
            async move { run(&def, &args, &exec).await }
        })
        .build()
}

async fn run(def: &CommandTool, args: &Arguments, exec: &Exec) -> Result<Value, ToolError> {
    let name = &def.name;
    let input = serde_json::to_vec(&**args)
        .map_err(|e| ToolError::new(format!("{name}: the arguments could not be written: {e}")))?;
    let program = {
        let p = std::path::Path::new(&def.command[0]);
        if p.is_relative() && def.command[0].contains(['/', '\\']) {
            def.dir.join(p.strip_prefix(".").unwrap_or(p))
        } else {
            p.to_path_buf()
        }
    };
    let mut cmd = crate::child::command(&program, &def.command[1..], &def.dir, &def.env);
    let mut child = cmd.spawn().map_err(|e| {
        ToolError::new(format!(
            "{name}: could not start {}: {e}",
            program.display()
        ))
    })?;
    let mut group = Group::of(&child);
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr_pipe = child.stderr.take();
    let stderr = Arc::new(Mutex::new(Tail::default()));

    let write = async move {
        if let Some(mut pipe) = stdin {
            // A command that exits without reading its input closes the pipe: not an error.
            let _ = pipe.write_all(&input).await;
            let _ = pipe.shutdown().await;
        }
    };
    // What the command prints; the readers borrow these and are dropped before they are read.
    let mut out = Vec::new();
    let overflow = tokio_util::sync::CancellationToken::new();
    let read_out = async {
        if let Some(pipe) = stdout {
            drain(pipe, |chunk| {
                if out.len() + chunk.len() > MAX_STDOUT_BYTES {
                    overflow.cancel();
                    return false;
                }
                out.extend_from_slice(chunk);
                true
            })
            .await;
        }
    };
    let err_tail = stderr.clone();
    let read_err = async move {
        if let Some(pipe) = stderr_pipe {
            drain(pipe, |chunk| {
                err_tail
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(chunk);
                true
            })
            .await;
        }
    };
    let stderr_suffix = || {
        stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .suffix()
    };
    enum Ended<T> {
        Done(T),
        TimedOut,
        Cancelled,
        Overflow,
    }
    let ended = {
        let readers = async { tokio::join!(read_out, read_err) };
        let finished = async {
            let (_, status) = tokio::join!(write, child.wait());
            // The command ended: whatever it started in its group ends with it.
            group.kill();
            status
        };
        // Its pipes close with it, unless a process that left the group holds them.
        let all = crate::child::ended_with_output(readers, finished);
        tokio::select! {
            status = all => Ended::Done(status),
            () = tokio::time::sleep(def.timeout) => Ended::TimedOut,
            () = exec.signal().cancelled() => Ended::Cancelled,
            () = overflow.cancelled() => Ended::Overflow,
        }
    };
    // A command stopped reading at the limit may die of the closed pipe (SIGPIPE) before
    // the overflow is seen: the limit is why it ended.
    let ended = match ended {
        Ended::Done(_) if overflow.is_cancelled() => Ended::Overflow,
        other => other,
    };
    let status = match ended {
        Ended::Done(status) => status,
        other => {
            // Kill everything the call started, and reap the command itself (briefly: it
            // was sent SIGKILL) so no zombie is left for a host without a reaper.
            group.kill();
            let _ = tokio::time::timeout(REAP_WAIT, child.wait()).await;
            return Err(match other {
                Ended::TimedOut => ToolError::with_kind(
                    ErrorKind::Timeout,
                    format!(
                        "{name}: did not finish within its {} ms timeout and was killed{}",
                        def.timeout.as_millis(),
                        stderr_suffix()
                    ),
                ),
                Ended::Overflow => ToolError::with_kind(
                    ErrorKind::Limit,
                    format!(
                        "{name}: printed more than {MAX_STDOUT_BYTES} bytes on stdout and was killed{}",
                        stderr_suffix()
                    ),
                ),
                _ => ToolError::cancelled(),
            });
        }
    };
    let status = status
        .map_err(|e| ToolError::new(format!("{name}: waiting for the command failed: {e}")))?;
    if !status.success() {
        return Err(ToolError::new(format!(
            "{name}: {}{}",
            describe_exit(&status),
            stderr_suffix()
        )));
    }
    if out.iter().all(u8::is_ascii_whitespace) {
        return Err(ToolError::new(format!(
            "{name}: printed nothing on stdout; a tool prints one JSON value{}",
            stderr_suffix()
        )));
    }
    serde_json::from_slice(&out).map_err(|e| {
        let shown = String::from_utf8_lossy(&out[..out.len().min(STDOUT_SHOWN)]).into_owned();
        let more = if out.len() > STDOUT_SHOWN { "…" } else { "" };
        // serde_json names a lone surrogate escape only as a bad hex escape.
        let why = e.to_string();
        let hint = if why.contains("surrogate") || why.contains("end of hex escape") {
            ": a `\\uD800`–`\\uDFFF` escape must be one half of a surrogate pair, since a string must be Unicode text"
        } else {
            ""
        };
        ToolError::new(format!(
            "{name}: the output is not one JSON value ({why}{hint}); stdout began: {shown:?}{more}{}",
            stderr_suffix()
        ))
    })
}
