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

/// Runs blocking file work on tokio's blocking pool; a cancelled signal ends the wait (the
/// work itself checks the token between files).
pub(crate) async fn blocking<T: Send + 'static>(
    signal: &CancellationToken,
    work: impl FnOnce(CancellationToken) -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    let token = signal.clone();
    let task = tokio::task::spawn_blocking(move || work(token));
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
