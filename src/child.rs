//! Child processes that tools start: manifest commands (a process per call) and MCP
//! servers over stdio (a process per server). Both run in a process group of their own with
//! a cleared environment, keep the end of their stderr for error messages, and are killed
//! as a group.

use std::collections::BTreeMap;
use std::path::Path;

use tokio::io::{AsyncRead, AsyncReadExt};

/// Environment variables a command keeps (when set); everything else is cleared, then the
/// tool's (or the server's) `env` is added.
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

/// Reads an object of environment variables (or headers): string values under non-empty
/// names without `=` or NUL.
///
/// # Errors
/// `(Some(name), message)` for a bad entry, `(None, message)` when it is not an object.
pub(crate) fn string_map(
    value: &serde_json::Value,
) -> Result<BTreeMap<String, String>, (Option<String>, String)> {
    let serde_json::Value::Object(vars) = value else {
        return Err((None, "expected an object of strings".into()));
    };
    vars.iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) if !k.is_empty() && !k.contains(['=', '\0']) => {
                Ok((k.clone(), s.clone()))
            }
            _ => Err((
                Some(k.clone()),
                "expected a string value under a name without '=' or NUL".into(),
            )),
        })
        .collect()
}

/// `program` with `args`, run in `dir` in a new process group, the environment cleared but
/// for [`ENV_ALLOW_LIST`] and `env`, all three pipes captured, killed when dropped.
pub(crate) fn command(
    program: impl AsRef<std::ffi::OsStr>,
    args: &[String],
    dir: &Path,
    env: &BTreeMap<String, String>,
) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .current_dir(dir)
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
    cmd.envs(env);
    #[cfg(unix)]
    cmd.process_group(0);
    cmd
}

/// The last [`MAX_STDERR_SHOWN`] bytes of a stream, and how many it carried in all.
#[derive(Default)]
pub(crate) struct Tail {
    bytes: Vec<u8>,
    total: usize,
}

impl Tail {
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len();
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > 2 * MAX_STDERR_SHOWN {
            let cut = self.bytes.len() - MAX_STDERR_SHOWN;
            self.bytes.drain(..cut);
        }
    }

    /// `; stderr: …` (its last bytes), or nothing when stderr was empty.
    pub(crate) fn suffix(&self) -> String {
        if self.total == 0 {
            return String::new();
        }
        let start = self.bytes.len().saturating_sub(MAX_STDERR_SHOWN);
        let text = String::from_utf8_lossy(&self.bytes[start..]);
        let text = text.trim_end();
        if text.is_empty() {
            return String::new();
        }
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

/// Kills a child's process group when asked, and when dropped.
pub(crate) struct Group {
    pgid: Option<i32>,
}

/// The groups of [`Group`]s not killed yet, each with the run whose polling started it (0:
/// none, as for an MCP server's), for [`kill_process_groups`] and [`kill_run_process_groups`].
static LIVE: std::sync::Mutex<Vec<(i32, u64)>> = std::sync::Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<(i32, u64)>> {
    LIVE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

thread_local! {
    /// The run being polled on this thread (see [`OwnedBy`]), 0 for none.
    static POLLING: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A new run's number for [`OwnedBy`] and [`kill_run_process_groups`] (never 0).
pub(crate) fn new_run() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// `future`, polled as run `run`: the groups the commands it starts while polled lead (its
/// tools' calls, which the run polls on its own thread) belong to that run.
pub(crate) struct OwnedBy<F> {
    run: u64,
    future: F,
}

impl<F> OwnedBy<F> {
    pub(crate) fn new(run: u64, future: F) -> Self {
        OwnedBy { run, future }
    }
}

impl<F: std::future::Future + Unpin> std::future::Future for OwnedBy<F> {
    type Output = F::Output;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        /// Puts back the run polled before, also when the poll panics.
        struct Restore(u64);
        impl Drop for Restore {
            fn drop(&mut self) {
                POLLING.set(self.0);
            }
        }
        let _restore = Restore(POLLING.replace(self.run));
        std::pin::Pin::new(&mut self.future).poll(cx)
    }
}

impl Group {
    /// The group `child` leads (it was started by [`command`]), owned by the run being
    /// polled on this thread, if any (see [`OwnedBy`]).
    pub(crate) fn of(child: &tokio::process::Child) -> Group {
        Group::owned(child, POLLING.get())
    }

    /// The group `child` leads, owned by no run: a process that outlives the call that
    /// started it (an MCP server).
    pub(crate) fn shared(child: &tokio::process::Child) -> Group {
        Group::owned(child, 0)
    }

    fn owned(child: &tokio::process::Child, run: u64) -> Group {
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        if let Some(pgid) = pgid {
            live().push((pgid, run));
        }
        Group { pgid }
    }

    pub(crate) fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            signal_group(pgid, Signal::Kill);
            let mut live = live();
            if let Some(at) = live.iter().position(|&(g, _)| g == pgid) {
                live.swap_remove(at);
            }
        }
    }

    /// Asks the group to end (SIGTERM); [`Group::kill`] still follows when it is dropped.
    pub(crate) fn terminate(&self) {
        if let Some(pgid) = self.pgid {
            signal_group(pgid, Signal::Terminate);
        }
    }
}

/// Kills (SIGKILL) the process group of every command and stdio MCP server this process's
/// tools started that has not been killed yet: for a host about to exit while a run it gave
/// up on still holds them (`codemode run` past [`ABANDON_AFTER`], or after a signal the
/// run did not notice), since a process that exits runs none of the drops that end them.
/// Unix only; elsewhere nothing.
///
/// [`ABANDON_AFTER`]: crate::run_code::ABANDON_AFTER
pub fn kill_process_groups() {
    for (pgid, _) in std::mem::take(&mut *live()) {
        signal_group(pgid, Signal::Kill);
    }
}

/// Kills (SIGKILL) the process groups run `run`'s calls started that are not killed yet:
/// for a run given up on while its thread still holds them.
pub(crate) fn kill_run_process_groups(run: u64) {
    let mut owned = Vec::new();
    live().retain(|&(pgid, owner)| {
        let mine = owner == run;
        if mine {
            owned.push(pgid);
        }
        !mine
    });
    for pgid in owned {
        signal_group(pgid, Signal::Kill);
    }
}

/// The signals a group is sent.
#[derive(Clone, Copy)]
enum Signal {
    Terminate,
    Kill,
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(unix)]
#[allow(unsafe_code)]
fn signal_group(pgid: i32, signal: Signal) {
    let signal = match signal {
        Signal::Terminate => libc::SIGTERM,
        Signal::Kill => libc::SIGKILL,
    };
    if pgid > 1 {
        // SAFETY: `killpg` takes two integers and touches no memory of ours. `pgid` is the
        // group this call created for its command (`process_group(0)` makes the child's pid
        // its group id); an error (the group is already gone) is ignored.
        unsafe {
            libc::killpg(pgid, signal);
        }
    }
}

#[cfg(not(unix))]
fn signal_group(_pgid: i32, _signal: Signal) {}

/// How long the output pipes may stay open after the command exited (held by a process
/// that left its process group) before what was printed so far is taken: 100 ms.
pub(crate) const PIPE_GRACE: std::time::Duration = std::time::Duration::from_millis(100);

/// Waits for a command to end with its output read: `finished` (the command's wait) and
/// `readers` (its pipes read to the end), or, when the command ends first, [`PIPE_GRACE`]
/// more for the readers. Returns what `finished` returned.
pub(crate) async fn ended_with_output<T>(
    readers: impl std::future::Future,
    finished: impl std::future::Future<Output = T>,
) -> T {
    tokio::pin!(readers);
    tokio::pin!(finished);
    tokio::select! {
        _ = &mut readers => finished.await,
        status = &mut finished => {
            let _ = tokio::time::timeout(PIPE_GRACE, &mut readers).await;
            status
        }
    }
}

/// Reads `pipe` to its end, handing each chunk to `sink`, which returns whether to go on.
pub(crate) async fn drain(mut pipe: impl AsyncRead + Unpin, mut sink: impl FnMut(&[u8]) -> bool) {
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
pub(crate) fn describe_exit(status: &std::process::ExitStatus) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_future_polled_as_a_run_is_that_run_only_while_polled() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let seen = |run| {
            let probe = std::future::poll_fn(|_| std::task::Poll::Ready(POLLING.get()));
            runtime.block_on(OwnedBy::new(run, Box::pin(probe)))
        };
        assert_eq!(seen(7), 7);
        assert_eq!(POLLING.get(), 0);
        // Nested: the inner run while the inner future is polled, the outer one after.
        let nested = OwnedBy::new(
            3,
            Box::pin(async {
                let inner = OwnedBy::new(4, Box::pin(async { POLLING.get() })).await;
                (inner, POLLING.get())
            }),
        );
        assert_eq!(runtime.block_on(nested), (4, 3));
        assert_eq!(POLLING.get(), 0);
        assert_ne!(new_run(), new_run());
    }
}
