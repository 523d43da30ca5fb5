//! Built-in file tools scoped to a root folder: `read_file`, `list_dir`,
//! `glob`, `grep`. They are ordinary tools built with the public tool API only.
//!
//! Paths in arguments are relative to the root (an absolute path is accepted only inside
//! it); paths in results are relative to the root with `/` separators. The work runs on
//! tokio's blocking pool (it is genuinely blocking I/O) and stops early when the call's
//! signal is cancelled.

mod bash;
mod cards;
mod glob;
mod grep;
mod list_dir;
mod read_file;
mod root;
mod web_fetch;
mod write;

use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::dispatch::{RegisterError, Registry, Tool, ToolError, ToolHandle};
use root::Root;
pub use web_fetch::{AllowedHosts, web_fetch_tool};

/// The built-in file tools over one root folder.
///
/// ```
/// use codemode::{FileTools, Registry};
/// let dir = tempfile::tempdir().unwrap();
/// let registry = Registry::new();
/// let _handles = FileTools::new(dir.path()).unwrap().register(&registry).unwrap();
/// assert_eq!(registry.names(), ["read_file", "list_dir", "glob", "grep"]);
/// ```
#[derive(Clone, Debug)]
pub struct FileTools {
    root: Arc<Root>,
}

impl FileTools {
    /// File tools over `root`.
    ///
    /// # Errors
    /// When `root` does not exist, cannot be resolved or is not a folder.
    pub fn new(root: &Path) -> std::io::Result<FileTools> {
        Ok(FileTools {
            root: Arc::new(Root::new(root)?),
        })
    }

    /// The resolved root folder.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// The tool definitions: `read_file`, `list_dir`, `glob`, `grep`.
    pub fn tools(&self) -> Vec<Tool> {
        vec![
            read_file::tool(self.root.clone()),
            list_dir::tool(self.root.clone()),
            glob::tool(self.root.clone()),
            grep::tool(self.root.clone()),
        ]
    }

    /// The tools that change files: `write_file` and `edit_file`. They are separate from
    /// [`FileTools::tools`] so that a host offers them only on purpose (and gates them
    /// with its policy, as `codemode --allow write` does).
    pub fn write_tools(&self) -> Vec<Tool> {
        vec![
            write::write_tool(self.root.clone()),
            write::edit_tool(self.root.clone()),
        ]
    }

    /// The shell tool, `bash`: a command run by `bash -c` in the root (or a folder under
    /// it), in a process group of its own with the environment of manifest commands.
    pub fn shell_tool(&self) -> Tool {
        bash::tool(self.root.clone())
    }

    /// Registers every tool; the handles keep them registered.
    ///
    /// # Errors
    /// When a name is taken in `registry`.
    pub fn register(&self, registry: &Registry) -> Result<Vec<ToolHandle>, RegisterError> {
        self.tools()
            .into_iter()
            .map(|t| registry.register(t))
            .collect()
    }
}

/// The turns of file work on the blocking pool, process-wide: one per core (see
/// [`blocking`]).
fn file_work_turns() -> &'static Arc<tokio::sync::Semaphore> {
    static TURNS: std::sync::OnceLock<Arc<tokio::sync::Semaphore>> = std::sync::OnceLock::new();
    TURNS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        Arc::new(tokio::sync::Semaphore::new(cores))
    })
}

/// Runs blocking file work on tokio's blocking pool; a cancelled signal ends the wait (the
/// work itself checks the token between files).
///
/// At most one piece of work per core runs at once, process-wide; the rest wait their turn
/// in order, and a call cancelled while it waits never starts. More would take the cores
/// from the threads that run programs: a `Promise.all` of 128 `grep`s over a large tree,
/// each on a thread of its own, made a run's timeout seconds late on 2 cores, and calls
/// still started after it.
pub(crate) async fn blocking<T: Send + 'static>(
    signal: &CancellationToken,
    work: impl FnOnce(CancellationToken) -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    let turn = tokio::select! {
        biased;
        _ = signal.cancelled() => return Err(ToolError::cancelled()),
        turn = file_work_turns().clone().acquire_owned() => turn
            .map_err(|e| ToolError::new(format!("the file operation could not start: {e}")))?,
    };
    let token = signal.clone();
    // The turn is held by the work itself: a call cancelled while its work runs does not
    // let another start beside that work.
    let task = tokio::task::spawn_blocking(move || {
        let _turn = turn;
        work(token)
    });
    tokio::select! {
        joined = task => joined.map_err(|e| ToolError::new(format!("the file operation failed: {e}")))?,
        _ = signal.cancelled() => Err(ToolError::cancelled()),
    }
}

/// A walker over `base` like ripgrep's: `.gitignore`d and hidden files are skipped unless
/// `include_ignored`; symlinks are not followed.
pub(crate) fn walker(base: &Path, include_ignored: bool) -> ignore::Walk {
    let mut builder = ignore::WalkBuilder::new(base);
    builder
        .standard_filters(!include_ignored)
        .follow_links(false)
        .sort_by_file_path(|a, b| a.cmp(b));
    builder.build()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    fn cores() -> usize {
        std::thread::available_parallelism().map_or(2, std::num::NonZero::get)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn file_work_takes_one_turn_per_core() {
        let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let signal = CancellationToken::new();
        let works = (0..4 * cores()).map(|i| {
            let (now, most, signal) = (now.clone(), most.clone(), signal.clone());
            async move {
                blocking(&signal, move |_| {
                    let running = now.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(running, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(20));
                    now.fetch_sub(1, Ordering::SeqCst);
                    Ok(i)
                })
                .await
            }
        });
        let done: Vec<usize> = futures::future::join_all(works)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(done, (0..4 * cores()).collect::<Vec<_>>());
        let most = most.load(Ordering::SeqCst);
        assert!((1..=cores()).contains(&most), "{most} ran at once");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn file_work_cancelled_while_it_waits_never_starts() {
        // Every turn taken: the work below waits.
        let turns = file_work_turns()
            .clone()
            .acquire_many_owned(u32::try_from(cores()).unwrap())
            .await
            .unwrap();
        let ran = Arc::new(AtomicBool::new(false));
        let signal = CancellationToken::new();
        let waiting = {
            let (ran, signal) = (ran.clone(), signal.clone());
            tokio::spawn(async move {
                blocking(&signal, move |_| {
                    ran.store(true, Ordering::SeqCst);
                    Ok(())
                })
                .await
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        signal.cancel();
        let e = waiting.await.unwrap().unwrap_err();
        assert_eq!(e.kind(), crate::dispatch::ErrorKind::Cancelled);
        drop(turns);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!ran.load(Ordering::SeqCst), "the cancelled work started");
    }
}
