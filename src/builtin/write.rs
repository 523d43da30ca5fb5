//! `write_file` and `edit_file`: the tools that change files under the root.

use std::io::Read;
use std::sync::Arc;

use serde_json::{Value, json};

use super::blocking;
use super::root::Root;
use crate::dispatch::{CallCard, Hunk, Location, Outcome, ResultCard, Tool, ToolError};
use crate::schema::{Node, ParameterSchema, ValueSchema};

/// Largest file `edit_file` edits, in bytes.
pub(super) const MAX_EDIT_BYTES: u64 = 16 << 20;

fn path_node() -> Node {
    Node::string()
        .min_length(1)
        .describe("File path, relative to the root.")
        .required()
}

pub(super) fn write_tool(root: Arc<Root>) -> Tool {
    Tool::builder("write_file")
        .annotations(crate::dispatch::ToolAnnotations::writes(true, true))
        .description("Create a file or replace its whole content (UTF-8). Missing folders are created; the write is atomic.")
        .parameters(ParameterSchema::new([
            ("path", path_node()),
            (
                "content",
                Node::string().describe("The file's new content.").required(),
            ),
        ]))
        .output(ValueSchema::new(
            Node::object([
                (
                    "path",
                    Node::string()
                        .describe("The file written, relative to the root.")
                        .required(),
                ),
                (
                    "bytes",
                    Node::integer()
                        .minimum(0)
                        .describe("Bytes written.")
                        .required(),
                ),
                (
                    "existed",
                    Node::boolean()
                        .describe("Whether the file existed (and was replaced).")
                        .required(),
                ),
            ])
            .additional_properties(false),
        ))
        .present_call(|args| CallCard::Diff {
            path: text(args, "path"),
            old_text: None,
            new_text: text(args, "content"),
        })
        .present_result(|args, outcome| written_card("Wrote", args, outcome))
        .execute(move |args, exec| {
            let root = root.clone();
            async move {
                let path = args.str("path").unwrap_or_default().to_owned();
                let content = args.str("content").unwrap_or_default().to_owned();
                let written = blocking(exec.signal(), move |_| {
                    root.write(&path, content.as_bytes())
                        .map(|w| (w, content.len()))
                })
                .await?;
                let (w, bytes) = written;
                Ok(json!({"path": w.path, "bytes": bytes, "existed": w.existed}))
            }
        })
        .build()
        .unwrap_or_else(|e| unreachable!("write_file is well defined: {e}"))
}

pub(super) fn edit_tool(root: Arc<Root>) -> Tool {
    Tool::builder("edit_file")
        .annotations(crate::dispatch::ToolAnnotations::writes(true, false))
        .description("Replace exact text in a file: old_text must occur once (or set replace_all). The write is atomic.")
        .parameters(ParameterSchema::new([
            ("path", path_node()),
            (
                "old_text",
                Node::string()
                    .min_length(1)
                    .describe("The text to replace, exactly as in the file (whitespace included).")
                    .required(),
            ),
            (
                "new_text",
                Node::string().describe("The text to put in its place.").required(),
            ),
            (
                "replace_all",
                Node::boolean()
                    .default_value(false)
                    .describe("Replace every occurrence instead of requiring exactly one."),
            ),
        ]))
        .output(ValueSchema::new(
            Node::object([
                (
                    "path",
                    Node::string()
                        .describe("The file edited, relative to the root.")
                        .required(),
                ),
                (
                    "replacements",
                    Node::integer()
                        .minimum(1)
                        .describe("How many occurrences were replaced.")
                        .required(),
                ),
                (
                    "hunks",
                    Node::array(
                        Node::object([
                            ("old_start", Node::integer().minimum(1).required()),
                            ("old_lines", Node::array(Node::string()).required()),
                            ("new_start", Node::integer().minimum(1).required()),
                            ("new_lines", Node::array(Node::string()).required()),
                        ])
                        .additional_properties(false),
                    )
                    .describe("The changed lines: where they were, what they were, what they are.")
                    .required(),
                ),
            ])
            .additional_properties(false),
        ))
        .render(|_, v| {
            let n = v["replacements"].as_u64().unwrap_or(0);
            let path = v["path"].as_str().unwrap_or_default();
            let mut text = format!(
                "edited {path}: {n} replacement{}",
                if n == 1 { "" } else { "s" }
            );
            for hunk in v["hunks"].as_array().into_iter().flatten() {
                text.push_str(&format!("\n@@ line {} @@", hunk["old_start"]));
                for l in hunk["old_lines"].as_array().into_iter().flatten() {
                    text.push_str(&format!("\n-{}", l.as_str().unwrap_or_default()));
                }
                for l in hunk["new_lines"].as_array().into_iter().flatten() {
                    text.push_str(&format!("\n+{}", l.as_str().unwrap_or_default()));
                }
            }
            vec![crate::dispatch::Content::text(text)]
        })
        .presentation_meta(|_, v| Some(json!({"hunks": v["hunks"]})))
        .present_call(|args| CallCard::Diff {
            path: text(args, "path"),
            old_text: Some(text(args, "old_text")),
            new_text: text(args, "new_text"),
        })
        .present_result(edited_card)
        .execute(move |args, exec| {
            let root = root.clone();
            async move {
                let path = args.str("path").unwrap_or_default().to_owned();
                let old = args.str("old_text").unwrap_or_default().to_owned();
                let new = args.str("new_text").unwrap_or_default().to_owned();
                let all = args.get("replace_all").and_then(Value::as_bool) == Some(true);
                blocking(exec.signal(), move |_| edit(&root, &path, &old, &new, all)).await
            }
        })
        .build()
        .unwrap_or_else(|e| unreachable!("edit_file is well defined: {e}"))
}

/// Reads `path`, replaces `old` by `new` (once, or every time with `all`), writes it back.
fn edit(root: &Root, path: &str, old: &str, new: &str, all: bool) -> Result<Value, ToolError> {
    let (file, shown) = root.open(path)?;
    let meta = file
        .metadata()
        .map_err(|e| ToolError::new(format!("{shown}: {e}")))?;
    if meta.is_dir() {
        return Err(ToolError::new(format!(
            "{shown}: is a folder; give the path of a file"
        )));
    }
    if !meta.is_file() {
        return Err(ToolError::new(format!(
            "{shown}: not a regular file (a FIFO, a socket or a device); edit_file edits files"
        )));
    }
    if meta.len() > MAX_EDIT_BYTES {
        return Err(ToolError::new(format!(
            "{shown}: {} bytes; edit_file edits files up to {MAX_EDIT_BYTES} bytes",
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_EDIT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::new(format!("{shown}: {e}")))?;
    let original = String::from_utf8(bytes)
        .map_err(|_| ToolError::new(format!("{shown}: not UTF-8 text; edit_file edits text")))?;
    let at: Vec<usize> = original.match_indices(old).map(|(i, _)| i).collect();
    match at.len() {
        0 => {
            return Err(ToolError::new(format!(
                "{shown}: old_text was not found; it must match the file exactly, whitespace and line breaks included (read_file shows the text)"
            )));
        }
        n if n > 1 && !all => {
            return Err(ToolError::new(format!(
                "{shown}: old_text occurs {n} times; include more of the surrounding text to pick one, or set replace_all to replace them all"
            )));
        }
        _ => {}
    }
    let edited = original.replace(old, new);
    let hunks = hunks(&original, &at, old.len(), new);
    let written = root.write(path, edited.as_bytes())?;
    Ok(json!({"path": written.path, "replacements": at.len(), "hunks": hunks}))
}

/// The changed lines of replacing `old_len` bytes at each of `at` (sorted, apart) in
/// `text` by `new`: whole lines, numbered from 1, neighbouring changes on one line merged.
fn hunks(text: &str, at: &[usize], old_len: usize, new: &str) -> Vec<Hunk> {
    let line_start = |i: usize| text[..i].rfind('\n').map_or(0, |p| p + 1);
    let line_end = |i: usize| text[i..].find('\n').map_or(text.len(), |p| i + p);
    // Line numbers counted forward from the previous span: linear in the text.
    let (mut counted_to, mut line) = (0usize, 1u64);
    let mut line_no = |i: usize| {
        line += text[counted_to..i].matches('\n').count() as u64;
        counted_to = i;
        line
    };
    // Spans of whole lines, each with the matches inside it.
    let mut spans: Vec<(usize, usize, Vec<usize>)> = Vec::new();
    for &m in at {
        let (s, e) = (line_start(m), line_end(m + old_len));
        match spans.last_mut() {
            Some(last) if s <= last.1 => {
                last.1 = last.1.max(e);
                last.2.push(m);
            }
            _ => spans.push((s, e, vec![m])),
        }
    }
    let mut out = Vec::with_capacity(spans.len());
    let mut shift: i64 = 0;
    for (s, e, matches) in spans {
        let mut replaced = String::with_capacity(e - s + new.len());
        let mut from = s;
        for m in matches {
            replaced.push_str(&text[from..m]);
            replaced.push_str(new);
            from = m + old_len;
        }
        replaced.push_str(&text[from..e]);
        let old_lines: Vec<String> = text[s..e].split('\n').map(str::to_owned).collect();
        let new_lines: Vec<String> = replaced.split('\n').map(str::to_owned).collect();
        let old_start = line_no(s);
        let new_start = (old_start as i64 + shift).max(1) as u64;
        shift += new_lines.len() as i64 - old_lines.len() as i64;
        out.push(Hunk {
            old_start,
            old_lines,
            new_start,
            new_lines,
        });
    }
    out
}

fn text(args: &Value, key: &str) -> String {
    args.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn written_card(verb: &str, args: &Value, outcome: &Outcome) -> ResultCard {
    let path = outcome
        .value()
        .and_then(|v| v["path"].as_str())
        .map_or_else(|| text(args, "path"), str::to_owned);
    let text = match outcome.value() {
        Some(v) => format!(
            "{verb} {} bytes ({})",
            v["bytes"],
            if v["existed"] == true {
                "replaced"
            } else {
                "created"
            }
        ),
        None => outcome.text(),
    };
    ResultCard::Generic {
        title: if outcome.is_error() {
            format!("Write {path} (failed)")
        } else {
            format!("{verb} {path}")
        },
        text,
        is_error: outcome.is_error(),
        locations: vec![Location { path, line: None }],
    }
}

/// The completed `diff` card of an edit, from its hunks alone (no file read).
fn edited_card(args: &Value, outcome: &Outcome) -> ResultCard {
    let path = text(args, "path");
    // The presentation meta's hunks; a call from a program has none (nested calls are not
    // presented), and its value holds the same.
    let hunks = outcome
        .meta()
        .or_else(|| outcome.value())
        .and_then(|m| m.get("hunks"))
        .and_then(|h| serde_json::from_value::<Vec<HunkData>>(h.clone()).ok());
    match (hunks, outcome.is_error()) {
        (Some(hunks), false) => ResultCard::Diff {
            path,
            hunks: hunks
                .into_iter()
                .map(|h| Hunk {
                    old_start: h.old_start,
                    old_lines: h.old_lines,
                    new_start: h.new_start,
                    new_lines: h.new_lines,
                })
                .collect(),
        },
        _ => ResultCard::Generic {
            title: format!("Edit {path}"),
            text: outcome.text(),
            is_error: outcome.is_error(),
            locations: vec![Location { path, line: None }],
        },
    }
}

#[derive(serde::Deserialize)]
struct HunkData {
    old_start: u64,
    old_lines: Vec<String>,
    new_start: u64,
    new_lines: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(old_start: u64, old: &[&str], new_start: u64, new: &[&str]) -> Hunk {
        Hunk {
            old_start,
            old_lines: old.iter().map(|s| (*s).to_owned()).collect(),
            new_start,
            new_lines: new.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn hunks_are_whole_lines_renumbered_after_earlier_changes() {
        let text = "a\nfoo x\nb\nc foo\nd\n";
        let at: Vec<usize> = text.match_indices("foo").map(|(i, _)| i).collect();
        assert_eq!(
            hunks(text, &at, 3, "bar\nbaz"),
            vec![
                h(2, &["foo x"], 2, &["bar", "baz x"]),
                h(4, &["c foo"], 5, &["c bar", "baz"]),
            ]
        );
    }

    #[test]
    fn two_matches_on_one_line_make_one_hunk() {
        let text = "x = x + 1\n";
        let at: Vec<usize> = text.match_indices('x').map(|(i, _)| i).collect();
        assert_eq!(
            hunks(text, &at, 1, "y"),
            vec![h(1, &["x = x + 1"], 1, &["y = y + 1"])]
        );
    }
}
