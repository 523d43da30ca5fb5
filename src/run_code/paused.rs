//! Paused runs: what a run that paused for approval keeps, and where it is kept until
//! `run_code_resume` continues it.
//!
//! A run pauses when one of its calls meets an `ask` decision and nobody can answer now
//! (the registry has no approver). The run is kept as a [`PausedRun`] under an opaque id in
//! a [`PausedRuns`] store: [`MemoryPausedRuns`] by default, [`FilePausedRuns`] to survive a
//! restart, or a host's own. A run is taken out of its store when it is resumed, so an id
//! resumes once: the approved call cannot run twice.
//!
//! Defaults: kept [`DEFAULT_PAUSED_TTL`] (24 hours); a store keeps at most
//! [`DEFAULT_MAX_PAUSED_RUNS`] runs and [`DEFAULT_MAX_PAUSED_BYTES`] bytes (their JSON),
//! dropping the oldest past either.

use std::collections::VecDeque;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::sandbox::journal::Journal;

/// How long a paused run is kept by default: 24 hours.
pub const DEFAULT_PAUSED_TTL: Duration = Duration::from_secs(24 * 3600);
/// Most runs a store keeps by default.
pub const DEFAULT_MAX_PAUSED_RUNS: usize = 100;
/// Most bytes (of their JSON) a store keeps by default: 256 MiB.
pub const DEFAULT_MAX_PAUSED_BYTES: usize = 256 << 20;

/// A run that paused: the program, what it did up to the pause (its journal), and the
/// calls that wait for a decision. Serialises to JSON (the file store's form).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PausedRun {
    /// Its opaque id (letters, digits, `-`).
    pub id: String,
    /// When it paused, in milliseconds since the epoch.
    pub paused_at_ms: u64,
    /// When it expires, in milliseconds since the epoch: it cannot be resumed after.
    pub expires_at_ms: u64,
    /// The program, as `run_code` received it.
    pub code: String,
    /// The `timeout_ms` the call gave, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The tools the program could call, each with a digest of its schemas: a resume
    /// against another tool set is refused.
    pub tools: Vec<ToolPrint>,
    /// The calls that wait for a decision.
    pub approvals: Vec<PendingApproval>,
    /// What the run did up to the pause.
    pub journal: Journal,
    /// What the host attached to the run ([`RunCodeConfig::paused_host`]): `codemode run`
    /// keeps its folder and command line here, so `codemode resume` rebuilds the same tools.
    ///
    /// [`RunCodeConfig::paused_host`]: super::RunCodeConfig::paused_host
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub host: Value,
}

/// A tool the paused program could call, and a digest of its input and output schemas.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolPrint {
    /// The tool's name.
    pub name: String,
    /// FNV-1a 64 of its input and output JSON Schemas, in hex.
    pub schema: String,
}

/// A call that waits for a decision: `{"call", "tool", "arguments", "prompt", "card"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PendingApproval {
    /// Its number in the run: 1 for the program's first call. Decisions name it.
    pub call: u64,
    /// The tool.
    pub tool: String,
    /// The arguments it would run with.
    pub arguments: Value,
    /// What the policy asked.
    pub prompt: String,
    /// What the call would do, as a UI shows it (the tool's call card).
    pub card: Value,
}

/// Where paused runs are kept. Implement it to keep them in a host's own store; a run must
/// come back from [`PausedRuns::take`] as it went into [`PausedRuns::put`].
pub trait PausedRuns: Send + Sync + fmt::Debug + 'static {
    /// Keeps `run` under `run.id`.
    ///
    /// # Errors
    /// Why it could not be kept; the pause is then reported as an error.
    fn put(&self, run: PausedRun) -> Result<(), String>;

    /// Takes the run `id` out of the store (`None`: not kept). Taking is what makes an id
    /// resume once: two resumes of one id must not both get the run.
    ///
    /// # Errors
    /// Why the store could not be read.
    fn take(&self, id: &str) -> Result<Option<PausedRun>, String>;
}

/// Milliseconds since the epoch now.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A new id: `p` + when the run expires (milliseconds since the epoch, hex) + `-` + 64
/// random bits (hex). A store can drop expired runs by their ids alone, and an id that is
/// no longer kept can be told expired from unknown.
pub(crate) fn new_id(expires_at_ms: u64) -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(expires_at_ms);
    format!("p{expires_at_ms:x}-{:016x}", hasher.finish())
}

/// When the run of id `id` expires, read from the id (`None`: no id of ours).
pub(crate) fn expires_at(id: &str) -> Option<u64> {
    let rest = id.strip_prefix('p')?;
    let (time, random) = rest.split_once('-')?;
    if random.len() != 16 || !random.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(time, 16).ok()
}

/// Whether `id` could name a run (letters, digits, `-`; at most 64 characters): anything
/// else is never looked up (a file store makes a file name of it).
pub(crate) fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// The runs in memory: lost when the process ends.
#[derive(Debug)]
pub struct MemoryPausedRuns {
    max_runs: usize,
    max_bytes: usize,
    /// (run, its JSON size), oldest first.
    runs: Mutex<VecDeque<(PausedRun, usize)>>,
}

impl Default for MemoryPausedRuns {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_PAUSED_RUNS, DEFAULT_MAX_PAUSED_BYTES)
    }
}

impl MemoryPausedRuns {
    /// A store of at most `max_runs` runs and `max_bytes` bytes of their JSON.
    pub fn new(max_runs: usize, max_bytes: usize) -> Self {
        MemoryPausedRuns {
            max_runs,
            max_bytes,
            runs: Mutex::new(VecDeque::new()),
        }
    }
}

impl PausedRuns for MemoryPausedRuns {
    fn put(&self, run: PausedRun) -> Result<(), String> {
        let size = serde_json::to_vec(&run).map_or(0, |v| v.len());
        if size > self.max_bytes {
            return Err(too_large(size, self.max_bytes));
        }
        let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        let now = now_ms();
        runs.retain(|(r, _)| r.expires_at_ms > now);
        runs.push_back((run, size));
        let mut total: usize = runs.iter().map(|(_, s)| s).sum();
        while runs.len() > self.max_runs || total > self.max_bytes {
            let Some((_, s)) = runs.pop_front() else {
                break;
            };
            total -= s;
        }
        Ok(())
    }

    fn take(&self, id: &str) -> Result<Option<PausedRun>, String> {
        let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        let at = runs.iter().position(|(r, _)| r.id == id);
        Ok(at.and_then(|i| runs.remove(i)).map(|(r, _)| r))
    }
}

fn too_large(size: usize, max: usize) -> String {
    format!("the paused run is {size} bytes, more than the store keeps ({max} bytes)")
}

/// The runs as JSON files in a folder (`<id>.json`), so a paused run survives a restart:
/// `codemode mcp` and `codemode run` keep theirs in [`FilePausedRuns::default_dir`].
#[derive(Debug)]
pub struct FilePausedRuns {
    dir: PathBuf,
    max_runs: usize,
    max_bytes: usize,
}

impl FilePausedRuns {
    /// A store in `dir` with the default bounds; the folder is made when the first run is
    /// kept.
    ///
    /// # Errors
    /// `dir` exists and is not a folder.
    pub fn new(dir: impl Into<PathBuf>) -> std::io::Result<Self> {
        let dir = dir.into();
        if dir.exists() && !dir.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                "not a folder",
            ));
        }
        Ok(FilePausedRuns {
            dir,
            max_runs: DEFAULT_MAX_PAUSED_RUNS,
            max_bytes: DEFAULT_MAX_PAUSED_BYTES,
        })
    }

    /// Sets the bounds: at most `max_runs` runs and `max_bytes` bytes of files.
    pub fn bounds(mut self, max_runs: usize, max_bytes: usize) -> Self {
        self.max_runs = max_runs;
        self.max_bytes = max_bytes;
        self
    }

    /// `$XDG_STATE_HOME/codemode/paused`, else `~/.local/state/codemode/paused`, else
    /// `codemode-paused` in the system's temporary folder.
    pub fn default_dir() -> PathBuf {
        if let Some(state) = std::env::var_os("XDG_STATE_HOME").filter(|s| !s.is_empty()) {
            return PathBuf::from(state).join("codemode/paused");
        }
        if let Some(home) = std::env::var_os("HOME").filter(|s| !s.is_empty()) {
            return PathBuf::from(home).join(".local/state/codemode/paused");
        }
        std::env::temp_dir().join("codemode-paused")
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// The run `id`, read without taking it (`None`: not kept).
    ///
    /// # Errors
    /// The file could not be read or parsed.
    pub fn peek(&self, id: &str) -> Result<Option<PausedRun>, String> {
        if !valid_id(id) {
            return Ok(None);
        }
        let path = self.path(id);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| format!("the paused run {id} could not be read: {e}")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    /// Drops expired runs, then the oldest past the bounds (ids sort by expiry).
    fn prune(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = now_ms();
        let mut files: Vec<(u64, PathBuf, u64)> = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(id) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".json"))
            else {
                continue;
            };
            let Some(at) = expires_at(id) else {
                continue;
            };
            let size = entry.metadata().map_or(0, |m| m.len());
            files.push((at, path, size));
        }
        files.sort();
        let mut total: u64 = files.iter().map(|f| f.2).sum();
        let mut count = files.len();
        for (at, path, size) in files {
            let expired = at <= now;
            if (expired || count > self.max_runs || total > self.max_bytes as u64)
                && std::fs::remove_file(&path).is_ok()
            {
                count -= 1;
                total -= size;
            }
        }
    }
}

/// Makes `dir` (and its parents) when missing; a folder made here is readable by its owner
/// only (paused runs hold tool arguments and results).
fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

impl PausedRuns for FilePausedRuns {
    fn put(&self, run: PausedRun) -> Result<(), String> {
        if !valid_id(&run.id) {
            return Err(format!("{:?} is not a paused run's id", run.id));
        }
        let json = serde_json::to_vec(&run).map_err(|e| e.to_string())?;
        if json.len() > self.max_bytes {
            return Err(too_large(json.len(), self.max_bytes));
        }
        make_private_dir(&self.dir).map_err(|e| format!("{}: {e}", self.dir.display()))?;
        let mut file = tempfile::NamedTempFile::new_in(&self.dir)
            .map_err(|e| format!("{}: {e}", self.dir.display()))?;
        std::io::Write::write_all(&mut file, &json).map_err(|e| e.to_string())?;
        file.persist(self.path(&run.id))
            .map_err(|e| format!("{}: {e}", self.dir.display()))?;
        self.prune();
        Ok(())
    }

    fn take(&self, id: &str) -> Result<Option<PausedRun>, String> {
        if !valid_id(id) {
            return Ok(None);
        }
        // Renamed first: of two resumes at once, one gets the file.
        let taken = self.dir.join(format!(
            ".{id}.taken-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        match std::fs::rename(self.path(id), &taken) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", self.dir.display())),
        }
        let read = std::fs::read(&taken);
        let _ = std::fs::remove_file(&taken);
        let bytes = read.map_err(|e| format!("{}: {e}", taken.display()))?;
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| format!("the paused run {id} could not be read: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str, expires_at_ms: u64) -> PausedRun {
        PausedRun {
            id: id.to_owned(),
            paused_at_ms: 1,
            expires_at_ms,
            code: "return 1".into(),
            timeout_ms: None,
            tools: Vec::new(),
            approvals: Vec::new(),
            journal: Journal::default(),
            host: Value::Null,
        }
    }

    #[test]
    fn ids_carry_their_time_and_are_checked() {
        let id = new_id(0x18c2f3a9b10);
        assert_eq!(expires_at(&id), Some(0x18c2f3a9b10));
        assert!(valid_id(&id));
        assert!(!valid_id("../etc/passwd"));
        assert!(!valid_id(""));
        assert_eq!(expires_at("p12-xyz"), None);
    }

    #[test]
    fn a_memory_store_gives_a_run_once_and_keeps_its_bounds() {
        let store = MemoryPausedRuns::new(2, 1 << 20);
        let later = now_ms() + 60_000;
        for id in ["a", "b", "c"] {
            store.put(run(id, later)).unwrap();
        }
        // The oldest went, to keep two.
        assert_eq!(store.take("a").unwrap(), None);
        assert_eq!(store.take("b").unwrap().unwrap().id, "b");
        assert_eq!(store.take("b").unwrap(), None);
        // An expired run is dropped at the next put.
        store.put(run("old", 1)).unwrap();
        store.put(run("d", later)).unwrap();
        assert_eq!(store.take("old").unwrap(), None);
        let small = MemoryPausedRuns::new(10, 50);
        assert!(
            small
                .put(run("big", later))
                .unwrap_err()
                .contains("more than the store keeps")
        );
    }
}
