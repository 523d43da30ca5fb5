//! Spill files: the full output of a run whose preview was cut, written atomically into a
//! spill folder with a retention limit.
//!
//! A spill file holds exactly the text the model would have seen without the cap: every
//! console line (`[level] ` before lines that are not `log`), then `result: ` and the
//! result as JSON with each top-level item or member on a line of its own (so `read_file`
//! with `offset`/`limit` and `grep` can page through it), or `error: ` and the error.
//! Console lines stream into a temporary file in the folder as the program produces them;
//! the result is appended at the end and the file is renamed to its final name
//! (`run-<unix ms>-<random>.txt`), so a crash never leaves half a file under a final name.

use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::sandbox::{LogLevel, LogSink, ProgramError};

/// Where spill files go and how many are kept.
///
/// Defaults ([`SpillConfig::default`]): folder `<system temp dir>/codemode/spill`, at most
/// 100 files and 512 MiB in it, no `read_file` root, no `read_tool`. The CLI uses `<root>/.codemode/spill`
/// with `read_root` = the root, so the model can read spills back with the built-in
/// `read_file`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SpillConfig {
    /// The folder (created on demand, with its parents).
    pub dir: PathBuf,
    /// Most spill files kept in the folder; the oldest are removed first, never the file
    /// just written.
    pub max_files: usize,
    /// Most bytes of spill files kept in the folder (same rule).
    pub max_bytes: u64,
    /// The root of the built-in file tools, when the model has them: a spill file under it
    /// is named by its path relative to it, ready for `read_file`.
    pub read_root: Option<PathBuf>,
    /// The name of a tool that reads this folder's spill files back by id (a spill's id is
    /// its file name), for hosts whose model cannot open files: the MCP server's
    /// `read_spill`. When set, a saved spill's value carries `id` and `read_tool`, and the
    /// notice names the tool instead of the path. The tool takes `{"id": string}` and
    /// pages on from there; `run_code` only names it.
    pub read_tool: Option<String>,
}

impl Default for SpillConfig {
    fn default() -> Self {
        SpillConfig {
            dir: std::env::temp_dir().join("codemode").join("spill"),
            max_files: 100,
            max_bytes: 512 << 20,
            read_root: None,
            read_tool: None,
        }
    }
}

impl SpillConfig {
    /// A configuration writing into `dir`, with the default retention.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        SpillConfig {
            dir: dir.into(),
            ..SpillConfig::default()
        }
    }

    /// The folder `.codemode/spill` under `root`, readable with the built-in `read_file`
    /// of that root.
    pub fn under_root(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        SpillConfig {
            dir: root.join(".codemode").join("spill"),
            read_root: Some(root),
            ..SpillConfig::default()
        }
    }

    /// Sets the root of the built-in file tools (see [`SpillConfig::read_root`]).
    pub fn read_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.read_root = Some(root.into());
        self
    }

    /// Sets the tool that reads spills back by id (see [`SpillConfig::read_tool`]).
    pub fn read_tool(mut self, name: impl Into<String>) -> Self {
        self.read_tool = Some(name.into());
        self
    }

    /// Sets the retention: most files and most bytes kept in the folder.
    pub fn retention(mut self, max_files: usize, max_bytes: u64) -> Self {
        self.max_files = max_files;
        self.max_bytes = max_bytes;
        self
    }
}

/// A spill file written and kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Spilled {
    /// Its absolute path.
    pub(crate) path: PathBuf,
    /// Its size in bytes.
    pub(crate) bytes: u64,
    /// Its path relative to the `read_file` root, when it lies under it.
    pub(crate) read_file_path: Option<String>,
    /// Its id (file name) and the tool that reads it, when the folder has a `read_tool`.
    pub(crate) read_tool: Option<(String, String)>,
}

/// The spill file of one run while it is written: opened on the first line.
pub(crate) struct SpillWriter {
    config: SpillConfig,
    file: Option<BufWriter<tempfile::NamedTempFile>>,
    /// Console lines written.
    pub(crate) lines: usize,
    /// The first error, after which nothing more is written.
    error: Option<String>,
}

/// A [`SpillWriter`] shared between the run's console (which streams lines into it) and
/// `run_code` (which finishes it).
#[derive(Clone)]
pub(crate) struct SharedSpill(Arc<Mutex<SpillWriter>>);

impl SharedSpill {
    pub(crate) fn new(config: SpillConfig) -> Self {
        SharedSpill(Arc::new(Mutex::new(SpillWriter {
            config,
            file: None,
            lines: 0,
            error: None,
        })))
    }

    /// Runs `f` on the writer.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut SpillWriter) -> R) -> R {
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl LogSink for SharedSpill {
    fn write_line(&mut self, level: LogLevel, text: &str) -> io::Result<()> {
        self.with(|w| w.write_line(level, text))
    }
}

impl SpillWriter {
    fn open(&mut self) -> io::Result<&mut BufWriter<tempfile::NamedTempFile>> {
        if self.file.is_none() {
            fs::create_dir_all(&self.config.dir)?;
            let file = tempfile::Builder::new()
                .prefix(PARTIAL_PREFIX)
                .suffix(".txt")
                .tempfile_in(&self.config.dir)?;
            self.file = Some(BufWriter::with_capacity(64 << 10, file));
        }
        self.file
            .as_mut()
            .ok_or_else(|| io::Error::other("the spill file is not open"))
    }

    fn fail(&mut self, e: &io::Error) {
        if self.error.is_none() {
            self.error = Some(format!(
                "the spill file in {} could not be written: {e}",
                self.config.dir.display()
            ));
        }
        self.file = None;
    }

    /// Appends one console line as the model would see it.
    pub(crate) fn write_line(&mut self, level: LogLevel, text: &str) -> io::Result<()> {
        if self.error.is_some() {
            return Err(io::Error::other("the spill file failed earlier"));
        }
        let written = self.open().and_then(|f| {
            if level != LogLevel::Log {
                write!(f, "[{}] ", level.as_str())?;
            }
            f.write_all(text.as_bytes())?;
            f.write_all(b"\n")
        });
        match written {
            Ok(()) => {
                self.lines += 1;
                Ok(())
            }
            Err(e) => {
                self.fail(&e);
                Err(e)
            }
        }
    }

    /// Appends the result (or error), renames the file to its final name and applies the
    /// retention.
    ///
    /// # Errors
    /// A message saying what could not be written (the folder, the disk).
    pub(crate) fn finish(
        &mut self,
        outcome: Result<Option<&Value>, &ProgramError>,
    ) -> Result<Spilled, String> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let written = self.open().and_then(|f| {
            match outcome {
                Ok(None) => f.write_all(b"result: undefined")?,
                Ok(Some(v)) => {
                    f.write_all(b"result: ")?;
                    write_json_lines(&mut *f, v)?;
                }
                Err(e) => write!(f, "error: {e}")?,
            }
            f.write_all(b"\n")?;
            f.flush()
        });
        if let Err(e) = written {
            self.fail(&e);
            return Err(self.error.clone().unwrap_or_default());
        }
        let Some(file) = self.file.take() else {
            return Err("the spill file is not open".into());
        };
        let file = file
            .into_inner()
            .map_err(|e| format!("the spill file could not be written: {}", e.error()))?;
        let bytes = file.as_file().metadata().map(|m| m.len()).unwrap_or(0);
        let path = self.persist(file)?;
        prune(&self.config, &path);
        let read_file_path = self
            .config
            .read_root
            .as_deref()
            .and_then(|root| relative_under(root, &path));
        let read_tool = self.config.read_tool.as_ref().and_then(|tool| {
            let id = path.file_name()?.to_str()?.to_owned();
            Some((id, tool.clone()))
        });
        Ok(Spilled {
            path,
            bytes,
            read_file_path,
            read_tool,
        })
    }

    /// Renames the temporary file to `run-<unix ms>-<random>.txt` (never over another file).
    fn persist(&self, file: tempfile::NamedTempFile) -> Result<PathBuf, String> {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis();
        let random: String = file
            .path()
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix(PARTIAL_PREFIX))
            .and_then(|n| n.strip_suffix(".txt"))
            .unwrap_or("0")
            .to_owned();
        let path = self.config.dir.join(format!("run-{ms}-{random}.txt"));
        let path = std::path::absolute(&path).unwrap_or(path);
        file.persist_noclobber(&path).map_err(|e| {
            format!(
                "the spill file could not be renamed to {}: {}",
                path.display(),
                e.error
            )
        })?;
        Ok(path)
    }
}

/// Writes `v` as valid JSON with each item of a top-level array (or member of a top-level
/// object) on a line of its own, compact within: `read_file` pages through it by line and
/// `grep` finds items, at the cost of compact JSON (indenting everything would double the
/// size of a record list).
fn write_json_lines(f: &mut impl Write, v: &Value) -> io::Result<()> {
    match v {
        Value::Array(items) if !items.is_empty() => {
            f.write_all(b"[\n")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    f.write_all(b",\n")?;
                }
                serde_json::to_writer(&mut *f, item)?;
            }
            f.write_all(b"\n]")
        }
        Value::Object(members) if !members.is_empty() => {
            f.write_all(b"{\n")?;
            for (i, (key, item)) in members.iter().enumerate() {
                if i > 0 {
                    f.write_all(b",\n")?;
                }
                serde_json::to_writer(&mut *f, key)?;
                f.write_all(b": ")?;
                serde_json::to_writer(&mut *f, item)?;
            }
            f.write_all(b"\n}")
        }
        other => serde_json::to_writer(f, other).map_err(io::Error::from),
    }
}

/// Temporary spill files start with this; final ones with `run-`.
const PARTIAL_PREFIX: &str = ".partial-";

/// A temporary spill file older than this was left by a crashed host and is removed.
const STALE_PARTIAL: Duration = Duration::from_secs(24 * 3600);

/// Removes the oldest spill files until at most `max_files` files and `max_bytes` bytes
/// remain, never `keep`; also removes temporary files a crashed host left behind.
fn prune(config: &SpillConfig, keep: &Path) {
    let Ok(entries) = fs::read_dir(&config.dir) else {
        return;
    };
    let now = SystemTime::now();
    let mut files: Vec<(SystemTime, String, PathBuf, u64)> = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        let modified = meta.modified().unwrap_or(UNIX_EPOCH);
        if name.starts_with(PARTIAL_PREFIX) {
            if now.duration_since(modified).unwrap_or_default() > STALE_PARTIAL {
                let _ = fs::remove_file(entry.path());
            }
            continue;
        }
        if name.starts_with("run-") && name.ends_with(".txt") {
            files.push((modified, name, entry.path(), meta.len()));
        }
    }
    // Oldest first: by time, then by name (which starts with the creation time).
    files.sort();
    let mut count = files.len();
    let mut bytes: u64 = files.iter().map(|f| f.3).sum();
    for (_, _, path, len) in files {
        if count <= config.max_files && bytes <= config.max_bytes {
            break;
        }
        if path == keep || path.file_name() == keep.file_name() {
            continue;
        }
        if fs::remove_file(&path).is_ok() {
            count -= 1;
            bytes = bytes.saturating_sub(len);
        }
    }
}

/// `path` relative to `root` (both made absolute), with `/` separators, when it lies under it.
fn relative_under(root: &Path, path: &Path) -> Option<String> {
    let root = root
        .canonicalize()
        .ok()
        .or_else(|| std::path::absolute(root).ok())?;
    let path = path.canonicalize().ok()?;
    let rel = path.strip_prefix(&root).ok()?;
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    (!parts.is_empty()).then(|| parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spill_is_written_atomically_and_named_for_read_file() {
        let root = tempfile::tempdir().unwrap();
        let spill = SharedSpill::new(SpillConfig::under_root(root.path()));
        spill.with(|w| {
            w.write_line(LogLevel::Log, "hello").unwrap();
            w.write_line(LogLevel::Warn, "careful").unwrap();
        });
        // While the run goes on, only a temporary file exists.
        let dir = root.path().join(".codemode/spill");
        let names: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 1);
        assert!(names[0].starts_with(".partial-"), "{names:?}");
        let value = serde_json::json!({"a": [1, 2]});
        let spilled = spill.with(|w| w.finish(Ok(Some(&value)))).unwrap();
        let text = fs::read_to_string(&spilled.path).unwrap();
        assert_eq!(text, "hello\n[warn] careful\nresult: {\n\"a\": [1,2]\n}\n");
        assert_eq!(spilled.bytes, text.len() as u64);
        let rel = spilled.read_file_path.unwrap();
        assert!(
            rel.starts_with(".codemode/spill/run-") && rel.ends_with(".txt"),
            "{rel}"
        );
        assert!(!dir.read_dir().unwrap().any(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".partial-")
        }));
    }

    #[test]
    fn retention_removes_the_oldest_but_never_the_new_file() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..5 {
            let p = dir.path().join(format!("run-{i}-x.txt"));
            fs::write(&p, "0123456789").unwrap();
            let t = UNIX_EPOCH + Duration::from_secs(1_000_000 + i);
            fs::File::options()
                .write(true)
                .open(&p)
                .unwrap()
                .set_modified(t)
                .unwrap();
        }
        fs::write(dir.path().join("notes.txt"), "not a spill").unwrap();
        let config = SpillConfig::new(dir.path()).retention(2, 1 << 20);
        let spill = SharedSpill::new(config);
        let err = ProgramError::thrown("Error", "boom");
        let spilled = spill.with(|w| w.finish(Err(&err))).unwrap();
        assert_eq!(
            fs::read_to_string(&spilled.path).unwrap(),
            "error: Error: boom\n"
        );
        let mut left: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let new_name = spilled
            .path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let mut expected = vec!["notes.txt".to_owned(), "run-4-x.txt".to_owned(), new_name];
        expected.sort();
        assert_eq!(left, expected);

        // A byte limit smaller than the new file alone still keeps the new file.
        let config = SpillConfig::new(dir.path()).retention(100, 1);
        let spilled = SharedSpill::new(config)
            .with(|w| w.finish(Ok(None)))
            .unwrap();
        let left: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("run-"))
            .collect();
        assert_eq!(
            left,
            [spilled
                .path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()]
        );
    }

    #[test]
    fn an_unwritable_folder_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        fs::write(&blocker, "x").unwrap();
        let spill = SharedSpill::new(SpillConfig::new(blocker.join("spill")));
        let err = spill.with(|w| w.finish(Ok(None))).unwrap_err();
        assert!(err.starts_with("the spill file in "), "{err}");
        assert!(err.contains("could not be written"), "{err}");
    }
}
