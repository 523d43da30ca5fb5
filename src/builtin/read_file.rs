//! `read_file`: the text of a file, or a range of its lines.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::sync::Arc;

use serde_json::json;

use super::blocking;
use super::root::Root;
use crate::dispatch::{ErrorKind, Tool, ToolError};
use crate::schema::{Node, ParameterSchema, ValueSchema};

/// Most bytes of content one call returns.
const MAX_READ_BYTES: usize = 16 << 20;

pub(super) fn tool(root: Arc<Root>) -> Tool {
    Tool::builder("read_file")
        .annotations(crate::dispatch::ToolAnnotations::read_only())
        .description("Read a text file (UTF-8), whole or a range of lines.")
        .parameters(ParameterSchema::new([
            (
                "path",
                Node::string()
                    .describe("File path, relative to the root.")
                    .required(),
            ),
            (
                "offset",
                Node::integer()
                    .minimum(1)
                    .describe("First line to return, 1-based. Default: 1."),
            ),
            (
                "limit",
                Node::integer()
                    .minimum(1)
                    .describe("Most lines to return. Default: all."),
            ),
        ]))
        .output(ValueSchema::new(
            Node::object([
                (
                    "path",
                    Node::string()
                        .describe("The file, relative to the root.")
                        .required(),
                ),
                (
                    "content",
                    Node::string()
                        .describe("The lines returned, with their line breaks.")
                        .required(),
                ),
                (
                    "start_line",
                    Node::integer()
                        .describe("1-based number of the first line returned.")
                        .required(),
                ),
                (
                    "end_line",
                    Node::integer()
                        .describe(
                            "1-based number of the last line returned (start_line - 1 when none).",
                        )
                        .required(),
                ),
                (
                    "total_lines",
                    Node::integer()
                        .describe("Lines in the whole file.")
                        .required(),
                ),
                (
                    "truncated",
                    Node::boolean()
                        .describe("Whether lines after end_line were left out.")
                        .required(),
                ),
            ])
            .additional_properties(false),
        ))
        .present_call(super::cards::read_call)
        .present_result(super::cards::read_result)
        .execute(move |args, exec| {
            let root = root.clone();
            async move {
                let path = args.str("path").unwrap_or_default().to_owned();
                let offset = args.get("offset").and_then(count).unwrap_or(1).max(1);
                let limit = args.get("limit").and_then(count);
                // Opening and `fstat` are quick on the calling thread; so is reading a
                // small file, which a hand-off to the blocking pool would cost several
                // times over.
                let (file, relative, size) = open(&root, &path)?;
                if size <= INLINE_READ_BYTES {
                    // In one read, as big as it was when opened: a file growing meanwhile
                    // cannot keep the calling thread.
                    let mut bytes = Vec::with_capacity(size as usize);
                    file.take(size)
                        .read_to_end(&mut bytes)
                        .map_err(|e| ToolError::new(format!("{path}: {e}")))?;
                    return read(&bytes[..], &path, relative, offset, limit, exec.signal());
                }
                blocking(exec.signal(), move |token| {
                    read(BufReader::new(file), &path, relative, offset, limit, &token)
                })
                .await
            }
        })
        .build()
        .unwrap_or_else(|e| unreachable!("read_file is well defined: {e}"))
}

/// A line count the schema accepted (an integer ≥ 1): one past `u64` (`2 ** 64`, `1e300`)
/// is as good as `u64::MAX`, never taken as absent.
fn count(value: &serde_json::Value) -> Option<u64> {
    value.as_u64().or_else(|| {
        value.as_f64().filter(|f| *f >= 1.0).map(|f| {
            if f >= u64::MAX as f64 {
                u64::MAX
            } else {
                f as u64
            }
        })
    })
}

/// Files up to this many bytes are read on the calling thread; larger ones on the
/// blocking pool. Measured (`benches/sandbox.rs`, "sequential tiny read_file"): a hand-off to
/// the pool and back costs tens of µs on this machine, more than reading 64 KiB from the
/// page cache.
const INLINE_READ_BYTES: u64 = 64 << 10;

/// Opens `requested` inside the root: the file, its path relative to the root and its size.
///
/// # Errors
/// As [`Root::open`]; a folder, or anything but a regular file (a FIFO or a device could
/// block forever or never end).
fn open(root: &Root, requested: &str) -> Result<(File, String, u64), ToolError> {
    let (file, relative) = root.open(requested)?;
    let meta = file
        .metadata()
        .map_err(|e| ToolError::new(format!("{requested}: {e}")))?;
    if meta.is_dir() {
        return Err(ToolError::new(format!(
            "{requested} is a directory; use list_dir"
        )));
    }
    if !meta.is_file() {
        return Err(ToolError::new(format!(
            "{requested} is not a regular file (a FIFO, socket or device); read_file reads files"
        )));
    }
    Ok((file, relative, meta.len()))
}

/// Reads the lines `offset..offset + limit` of `file` (opened for `requested`, shown as
/// `relative`).
fn read(
    mut reader: impl BufRead,
    requested: &str,
    relative: String,
    offset: u64,
    limit: Option<u64>,
    token: &tokio_util::sync::CancellationToken,
) -> Result<serde_json::Value, ToolError> {
    let io_error = |e: std::io::Error| ToolError::new(format!("{requested}: {e}"));
    let mut content = String::new();
    let mut line = Vec::new();
    let mut number = 0u64;
    let mut end = offset - 1;
    let last = limit.map(|l| offset.saturating_add(l) - 1);
    loop {
        if number.is_multiple_of(4096) && token.is_cancelled() {
            return Err(ToolError::cancelled());
        }
        let wanted = number + 1 >= offset && last.is_none_or(|l| number < l);
        if !wanted {
            // Lines outside the range are counted, never held.
            if reader.skip_until(b'\n').map_err(io_error)? == 0 {
                break;
            }
            number += 1;
            continue;
        }
        // At most one byte more than the room left, so one long line cannot fill memory.
        line.clear();
        let room = (MAX_READ_BYTES - content.len()) as u64 + 1;
        let n = (&mut reader)
            .take(room)
            .read_until(b'\n', &mut line)
            .map_err(io_error)?;
        if n == 0 {
            break;
        }
        number += 1;
        if content.len() + line.len() > MAX_READ_BYTES {
            return Err(ToolError::with_kind(
                ErrorKind::Limit,
                format!(
                    "{requested}: the lines asked for exceed {MAX_READ_BYTES} bytes; read fewer with offset and limit"
                ),
            ));
        }
        let text = std::str::from_utf8(&line).map_err(|e| {
            ToolError::new(format!(
                "{requested} is not a UTF-8 text file (invalid byte on line {number}, column {})",
                e.valid_up_to() + 1
            ))
        })?;
        content.push_str(text);
        end = number;
    }
    Ok(json!({
        "path": relative,
        "content": content,
        "start_line": offset,
        "end_line": end,
        "total_lines": number,
        "truncated": end < number,
    }))
}
