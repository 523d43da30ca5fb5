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
//!   [`PIPE_GRACE`] at most.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::CommandTool;
use crate::dispatch::{Arguments, BuildError, ErrorKind, Exec, Tool, ToolError};

/// Environment variables a command keeps (when set); everything else is cleared, then the
/// tool's `env` is added.
pub const ENV_ALLOW_LIST: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "SYSTEMROOT",
];

/// Bytes of the end of stderr an error message carries.
pub const MAX_STDERR_SHOWN: usize = 2_000;

/// Most bytes a command may print on stdout: 64 MiB.
pub const MAX_STDOUT_BYTES: usize = 64 << 20;

/// How long a killed command is waited for, to reap it.
const REAP_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// How long the output pipes may stay open after the command exited (held by a process
/// that left its process group) before what was printed so far is taken: 100 ms.
const PIPE_GRACE: std::time::Duration = std::time::Duration::from_millis(100);

/// Bytes of stdout quoted when it is not JSON.
const STDOUT_SHOWN: usize = 200;

pub(super) fn tool(def: Arc<CommandTool>) -> Result<Tool, BuildError> {
    let run_def = def.clone();
    Tool::builder(def.name.clone())
        .description(def.description.clone())
        .parameters(def.parameters.clone())
        .output(def.output.clone())
        .execute(move |args: Arguments, exec: Exec| {
            let def = run_def.clone();
            async move { run(&def, &args, &exec).await }
        })
        .build()
}

/// The last bytes of a stream.
#[derive(Default)]
struct Tail {
    bytes: Vec<u8>,
    total: usize,
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len();
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > 2 * MAX_STDERR_SHOWN {
            let cut = self.bytes.len() - MAX_STDERR_SHOWN;
            self.bytes.drain(..cut);
        }
    }

    /// `; stderr: …` (its last bytes), or nothing when stderr was empty.
    fn suffix(&self) -> String {
        if self.total == 0 {
            return String::new();
        }
        let start = self.bytes.len().saturating_sub(MAX_STDERR_SHOWN);
        let text = String::from_utf8_lossy(&self.bytes[start..]);
        let text = text.trim_end();
        if self.total > MAX_STDERR_SHOWN {
            format!(
                "; stderr (last {MAX_STDERR_SHOWN} of {} bytes): …{text}",
                self.total
            )
        } else {
            format!("; stderr: {text}")
        }
    }
}

/// Kills a call's process group when asked, and when dropped (the call was dropped).
struct Group {
    pgid: Option<i32>,
}

impl Group {
    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            kill_group(pgid);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(unix)]
#[allow(unsafe_code)]
fn kill_group(pgid: i32) {
    if pgid > 1 {
        // SAFETY: `killpg` takes two integers and touches no memory of ours. `pgid` is the
        // group this call created for its command (`process_group(0)` makes the child's pid
        // its group id); an error (the group is already gone) is ignored.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

#[cfg(not(unix))]
fn kill_group(_pgid: i32) {}

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
    let mut cmd = tokio::process::Command::new(&program);
    cmd.args(&def.command[1..])
        .current_dir(&def.dir)
        .env_clear()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    for key in ENV_ALLOW_LIST {
        if let Some(v) = std::env::var_os(key) {
            cmd.env(key, v);
        }
    }
    cmd.envs(&def.env);
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = cmd.spawn().map_err(|e| {
        ToolError::new(format!(
            "{name}: could not start {}: {e}",
            program.display()
        ))
    })?;
    let mut group = Group {
        pgid: child.id().and_then(|id| i32::try_from(id).ok()),
    };
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
        let all = async {
            tokio::pin!(readers);
            tokio::pin!(finished);
            tokio::select! {
                _ = &mut readers => finished.await,
                status = &mut finished => {
                    // Its pipes are closed now, unless a process that left the group holds
                    // them: take what was printed until it exited.
                    let _ = tokio::time::timeout(PIPE_GRACE, &mut readers).await;
                    status
                }
            }
        };
        tokio::select! {
            status = all => Ended::Done(status),
            () = tokio::time::sleep(def.timeout) => Ended::TimedOut,
            () = exec.signal().cancelled() => Ended::Cancelled,
            () = overflow.cancelled() => Ended::Overflow,
        }
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
        ToolError::new(format!(
            "{name}: the output is not one JSON value ({e}); stdout began: {shown:?}{more}{}",
            stderr_suffix()
        ))
    })
}

/// Reads `pipe` to its end, handing each chunk to `sink`, which returns whether to go on.
async fn drain(mut pipe: impl AsyncRead + Unpin, mut sink: impl FnMut(&[u8]) -> bool) {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if !sink(&buf[..n]) {
                    break;
                }
            }
        }
    }
}

/// `exited with status 3`, `killed by signal 9 (SIGKILL)`.
fn describe_exit(status: &std::process::ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let name = match sig {
                libc::SIGKILL => " (SIGKILL)",
                libc::SIGTERM => " (SIGTERM)",
                libc::SIGSEGV => " (SIGSEGV)",
                libc::SIGABRT => " (SIGABRT)",
                libc::SIGINT => " (SIGINT)",
                libc::SIGPIPE => " (SIGPIPE)",
                libc::SIGBUS => " (SIGBUS)",
                libc::SIGFPE => " (SIGFPE)",
                libc::SIGILL => " (SIGILL)",
                _ => "",
            };
            return format!("killed by signal {sig}{name}");
        }
    }
    format!("ended abnormally ({status})")
}
