//! `read_spill`: a model behind an MCP client cannot open the server's files, so the full
//! output of a cut run is read back through the server, in pages, by the spill's id.
//!
//! Spills go to a private folder the server creates (mode 0700 on Unix) and removes when
//! the host drops the server; `run_code`
//! names each spill by its file name (`id`) and `read_spill` as the tool that reads it.
//! A session records the ids its own runs produced and reads only those: an id from
//! another session, a made-up one and a path all get the same refusal.
//!
//! Pages are byte ranges cut at character boundaries: `{"id", "offset"?, "limit"?}` →
//! `{"id", "text", "offset", "next_offset"?, "bytes"}`, `next_offset` absent at the end.

use std::collections::BTreeSet;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde_json::{Value, json};

use super::{McpServerError, READ_SPILL};
use crate::run_code::SpillConfig;

/// The server's private spill folder: where it is and what it keeps.
pub(super) struct SpillFolder {
    dir: PathBuf,
    max_files: usize,
    max_bytes: u64,
}

/// Removes the private spill folder when dropped (held by the server's handles, not by its
/// sessions, so the folder goes when the host drops the server).
pub(super) struct FolderGuard(PathBuf);

impl Drop for FolderGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl SpillFolder {
    /// A new private folder `mcp-<pid>-<random>` inside `config.dir` (created if missing),
    /// readable by its owner only; first removes the folders there of servers that no longer
    /// run (on Linux, where the process table says so), whose spills nobody can read.
    pub(super) fn create(config: &SpillConfig) -> Result<(Self, FolderGuard), McpServerError> {
        let failed = |source| McpServerError::SpillFolder {
            dir: config.dir.clone(),
            source,
        };
        std::fs::create_dir_all(&config.dir).map_err(failed)?;
        remove_abandoned(&config.dir);
        let mut builder = tempfile::Builder::new();
        let prefix = format!("mcp-{}-", std::process::id());
        builder.prefix(&prefix);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o700));
        }
        let dir = builder.tempdir_in(&config.dir).map_err(failed)?.keep();
        Ok((
            SpillFolder {
                dir: dir.clone(),
                max_files: config.max_files,
                max_bytes: config.max_bytes,
            },
            FolderGuard(dir),
        ))
    }

    /// The spill configuration of the server's `run_code`: this folder, `config`'s
    /// retention, read back with `read_spill`.
    pub(super) fn spill_config(&self, config: &SpillConfig) -> SpillConfig {
        SpillConfig::new(&self.dir)
            .retention(config.max_files, config.max_bytes)
            .read_tool(READ_SPILL)
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(id)
    }
}

/// Removes the `mcp-<pid>-…` folders in `dir` whose process has ended (a server that was
/// killed could not remove its own). Only on Linux, where `/proc` tells; elsewhere they
/// stay.
fn remove_abandoned(dir: &Path) {
    if !cfg!(target_os = "linux") {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("mcp-"))
            .and_then(|n| n.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The ids of the spills one session's runs wrote.
#[derive(Default)]
pub(super) struct SessionSpills(Mutex<BTreeSet<String>>);

impl SessionSpills {
    /// Records a spill of this session.
    pub(super) fn record(&self, id: &str) {
        if is_spill_name(id) {
            self.lock().insert(id.to_owned());
        }
    }

    fn has(&self, id: &str) -> bool {
        self.lock().contains(id)
    }

    /// Removes the session's spill files (when the session ends).
    pub(super) fn remove_all(&self, folder: &SpillFolder) {
        for id in std::mem::take(&mut *self.lock()) {
            let _ = std::fs::remove_file(folder.path(&id));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether `id` has the form of a spill file's name (`run-<ms>-<random>.txt`): one plain
/// file name, no separator, no leading dot.
fn is_spill_name(id: &str) -> bool {
    id.starts_with("run-")
        && id.ends_with(".txt")
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        && !id.contains("..")
}

/// `read_spill` as MCP lists it; pages of at most `page_bytes` bytes.
pub(super) fn tool(page_bytes: usize) -> rmcp::model::Tool {
    let input = json!({
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "The spill's id, as run_code's result names it (spill.id)."},
            "offset": {"type": "integer", "minimum": 0, "description": "Byte offset to start at. Default: 0; each page says where the next one starts."},
            "limit": {"type": "integer", "minimum": 1, "maximum": page_bytes, "description": format!("Most bytes to return. Default and most: {page_bytes}.")},
        },
        "required": ["id"],
        "additionalProperties": false,
    });
    let output = json!({
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "text": {"type": "string", "description": "The page: whole characters only."},
            "offset": {"type": "integer", "minimum": 0, "description": "Byte offset of the page's start."},
            "next_offset": {"type": "integer", "minimum": 0, "description": "Byte offset of the next page; absent at the end."},
            "bytes": {"type": "integer", "minimum": 0, "description": "Size of the whole spill in bytes."},
        },
        "required": ["id", "text", "offset", "bytes"],
        "additionalProperties": false,
    });
    let description = format!(
        "Read the full output of a run_code call whose output was cut, one page (at most {page_bytes} bytes) at a time: \
         its console lines, then its result as JSON with one top-level item per line. The cut result names the spill's id. \
         Only the spills of this session's runs can be read."
    );
    rmcp::model::Tool::new(READ_SPILL, description, Arc::new(object(input)))
        .with_raw_output_schema(Arc::new(object(output)))
}

fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    }
}

/// One page of a spill.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Page {
    id: String,
    text: String,
    offset: u64,
    next_offset: Option<u64>,
    bytes: u64,
}

impl Page {
    /// The MCP result: the page's text and a last line saying where it is in the spill and
    /// how to read on; the page as `structuredContent`.
    pub(super) fn into_result(self) -> CallToolResult {
        let end = self.next_offset.unwrap_or(self.bytes);
        let id = Value::String(self.id.clone());
        let footer = match self.next_offset {
            Some(next) => format!(
                "[bytes {}-{end} of {}; next page: read_spill {{\"id\": {id}, \"offset\": {next}}}]",
                self.offset, self.bytes
            ),
            None => format!("[bytes {}-{end} of {}: the end]", self.offset, self.bytes),
        };
        let mut text = self.text.clone();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&footer);
        let mut value = json!({"id": self.id, "text": self.text, "offset": self.offset});
        if let Some(next) = self.next_offset {
            value["next_offset"] = next.into();
        }
        value["bytes"] = self.bytes.into();
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(value);
        result
    }
}

/// A `read_spill` call with `arguments`, in a session whose spills are `session`.
///
/// # Errors
/// The message for the model: bad arguments, a spill this session does not have, one the
/// retention removed, an offset past the end.
pub(super) async fn read(
    folder: Option<&SpillFolder>,
    session: &SessionSpills,
    page_bytes: usize,
    arguments: &Value,
) -> Result<Page, String> {
    let id = match arguments.get("id") {
        Some(Value::String(id)) => id.clone(),
        Some(other) => return Err(format!("read_spill: id must be a string, not {other}")),
        None => {
            return Err(
                "read_spill: id is required (the spill's id, as run_code's result names it)".into(),
            );
        }
    };
    let offset = match arguments.get("offset") {
        None => 0,
        Some(v) => v.as_u64().ok_or_else(|| {
            format!("read_spill: offset must be an integer of at least 0, not {v}")
        })?,
    };
    let limit = match arguments.get("limit") {
        None => page_bytes as u64,
        Some(v) => match v.as_u64() {
            Some(n) if n >= 1 => n.min(page_bytes as u64),
            _ => {
                return Err(format!(
                    "read_spill: limit must be an integer of at least 1, not {v}"
                ));
            }
        },
    };
    if let Some(key) = arguments.as_object().and_then(|o| {
        o.keys()
            .find(|k| !matches!(k.as_str(), "id" | "offset" | "limit"))
    }) {
        return Err(format!(
            "read_spill: unknown argument `{key}`; it takes id, offset and limit"
        ));
    }
    let refused = || {
        format!(
            "read_spill: this session has no spill {}; only the spills of this session's run_code calls can be read, by the id their result names",
            Value::String(id.clone())
        )
    };
    let Some(folder) = folder else {
        return Err(refused());
    };
    if !is_spill_name(&id) || !session.has(&id) {
        return Err(refused());
    }
    let path = folder.path(&id);
    let (max_files, max_bytes) = (folder.max_files, folder.max_bytes);
    let read = tokio::task::spawn_blocking(move || read_page(&path, offset, limit))
        .await
        .map_err(|e| format!("read_spill: the read failed: {e}"))?;
    match read {
        Ok((text, start, next, bytes)) => Ok(Page {
            id,
            text,
            offset: start,
            next_offset: next,
            bytes,
        }),
        Err(ReadError::Gone) => Err(format!(
            "read_spill: the spill {} was removed: the server keeps the latest {max_files} spills and {max_bytes} bytes of them",
            Value::String(id)
        )),
        Err(ReadError::PastEnd(bytes)) => Err(format!(
            "read_spill: offset {offset} is past the end of the spill ({bytes} bytes)"
        )),
        Err(ReadError::Io(e)) => Err(format!("read_spill: {e}")),
    }
}

enum ReadError {
    Gone,
    PastEnd(u64),
    Io(std::io::Error),
}

/// Reads at most `limit` bytes of `path` from `offset`, both moved to character
/// boundaries (the start forward, the end back; at least one character when any is
/// left). Returns the text, its start, the next page's start (none at the end) and the
/// file's size.
fn read_page(
    path: &Path,
    offset: u64,
    limit: u64,
) -> Result<(String, u64, Option<u64>, u64), ReadError> {
    let mut file = std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ReadError::Gone,
        _ => ReadError::Io(e),
    })?;
    let bytes = file.metadata().map_err(ReadError::Io)?.len();
    if offset > bytes {
        return Err(ReadError::PastEnd(bytes));
    }
    file.seek(SeekFrom::Start(offset)).map_err(ReadError::Io)?;
    // Three bytes more: the rest of a character cut by the limit.
    let mut buf = Vec::new();
    file.take(limit + 3)
        .read_to_end(&mut buf)
        .map_err(ReadError::Io)?;
    let skip = buf
        .iter()
        .take_while(|b| (**b & 0b1100_0000) == 0b1000_0000)
        .count();
    let start = offset + skip as u64;
    let room = (limit as usize).min(buf.len().saturating_sub(skip));
    let body = &buf[skip..];
    let mut end = room;
    while end > 0 && end < body.len() && (body[end] & 0b1100_0000) == 0b1000_0000 {
        end -= 1;
    }
    if end == 0 && !body.is_empty() {
        // The limit is smaller than the first character: take that character whole.
        end = 1 + body[1..]
            .iter()
            .take_while(|b| (**b & 0b1100_0000) == 0b1000_0000)
            .count();
    }
    let text = String::from_utf8_lossy(&body[..end]).into_owned();
    let stop = start + end as u64;
    let next = (stop < bytes).then_some(stop);
    Ok((text, start, next, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_cut_at_character_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run-1-a.txt");
        std::fs::write(&path, "ab€cd").unwrap(); // € is 3 bytes: 2..5
        let page = |offset, limit| match read_page(&path, offset, limit) {
            Ok(p) => p,
            Err(_) => panic!("read failed"),
        };
        assert_eq!(page(0, 3), ("ab".into(), 0, Some(2), 7));
        assert_eq!(page(2, 3), ("€".into(), 2, Some(5), 7));
        // A start inside a character moves to the next one.
        assert_eq!(page(3, 10), ("cd".into(), 5, None, 7));
        // A limit smaller than the character still makes progress.
        assert_eq!(page(2, 1), ("€".into(), 2, Some(5), 7));
        assert_eq!(page(7, 4), (String::new(), 7, None, 7));
        assert!(matches!(read_page(&path, 8, 1), Err(ReadError::PastEnd(7))));
    }

    #[test]
    fn only_spill_file_names_are_ids() {
        assert!(is_spill_name("run-1700000000000-AbC123.txt"));
        for bad in [
            "../run-1-a.txt",
            "run-1/../../etc/passwd.txt",
            "/etc/passwd",
            ".partial-x.txt",
            "run-1-a.txt/",
            "notes.txt",
            "run-..txt",
        ] {
            assert!(!is_spill_name(bad), "{bad}");
        }
    }
}
