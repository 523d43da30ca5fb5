//! `list_dir`: the entries of a folder.

use std::sync::Arc;

use serde_json::json;

use super::blocking;
use super::root::Root;
use crate::dispatch::{Tool, ToolError};
use crate::schema::{Node, ParameterSchema, ValueSchema};

/// Most entries one call returns.
const MAX_ENTRIES: usize = 10_000;

pub(super) fn tool(root: Arc<Root>) -> Tool {
    let entry = Node::object([
        ("name", Node::string().required()),
        (
            "kind",
            Node::string()
                .string_enum(["file", "dir", "symlink", "other"])
                .required(),
        ),
        (
            "size",
            Node::integer()
                .minimum(0)
                .describe("Bytes (files only; 0 otherwise).")
                .required(),
        ),
    ])
    .additional_properties(false);
    Tool::builder("list_dir")
        .annotations(crate::dispatch::ToolAnnotations::read_only())
        .description("List a folder's entries, sorted by name.")
        .parameters(ParameterSchema::new([(
            "path",
            Node::string()
                .describe("Folder, relative to the root. Default: the root.")
                .default_value("."),
        )]))
        .output(ValueSchema::new(
            Node::object([
                ("path", Node::string().required()),
                ("entries", Node::array(entry).required()),
                ("truncated", Node::boolean().required()),
            ])
            .additional_properties(false),
        ))
        .present_call(super::cards::list_call)
        .execute(move |args, exec| {
            let root = root.clone();
            async move {
                let path = args.str("path").unwrap_or(".").to_owned();
                blocking(exec.signal(), move |_token| list(&root, &path)).await
            }
        })
        .build()
        .unwrap_or_else(|e| unreachable!("list_dir is well defined: {e}"))
}

fn list(root: &Root, requested: &str) -> Result<serde_json::Value, ToolError> {
    let dir = root.resolve(requested)?;
    if !dir.is_dir() {
        return Err(ToolError::new(format!(
            "{requested} is not a folder; use read_file"
        )));
    }
    let read = std::fs::read_dir(&dir).map_err(|e| ToolError::new(format!("{requested}: {e}")))?;
    let mut entries = Vec::new();
    for entry in read {
        let entry = entry.map_err(|e| ToolError::new(format!("{requested}: {e}")))?;
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        let kind = if meta.is_symlink() {
            "symlink"
        } else if meta.is_dir() {
            "dir"
        } else if meta.is_file() {
            "file"
        } else {
            "other"
        };
        let size = if meta.is_file() { meta.len() } else { 0 };
        entries.push((entry.file_name().to_string_lossy().into_owned(), kind, size));
    }
    entries.sort();
    let truncated = entries.len() > MAX_ENTRIES;
    entries.truncate(MAX_ENTRIES);
    let entries: Vec<serde_json::Value> = entries
        .into_iter()
        .map(|(name, kind, size)| json!({"name": name, "kind": kind, "size": size}))
        .collect();
    Ok(json!({"path": root.relative(&dir), "entries": entries, "truncated": truncated}))
}
