//! `grep`: lines matching a regular expression, as data.

use std::io::{BufRead, BufReader, Read};
use std::sync::Arc;

use serde_json::json;

use super::root::Root;
use super::{blocking, walker};
use crate::dispatch::{Tool, ToolError};
use crate::schema::{Node, ParameterSchema, ValueSchema};

/// Longest line returned; longer lines are cut with `…`.
const MAX_LINE_CHARS: usize = 2_000;

pub(super) fn tool(root: Arc<Root>) -> Tool {
    let hit = Node::object([
        (
            "path",
            Node::string()
                .describe("File, relative to the root.")
                .required(),
        ),
        (
            "line_number",
            Node::integer()
                .minimum(1)
                .describe("1-based line number.")
                .required(),
        ),
        (
            "line",
            Node::string()
                .describe("The matching line, without its line break.")
                .required(),
        ),
    ])
    .additional_properties(false);
    Tool::builder("grep")
        .annotations(crate::dispatch::ToolAnnotations::read_only())
        .description(
            "Search files for lines matching a regular expression (Rust regex syntax, like ripgrep). \
             Binary files, files ignored by .gitignore and hidden files are skipped unless include_ignored.",
        )
        .parameters(ParameterSchema::new([
            ("pattern", Node::string().min_length(1).describe("Regular expression.").required()),
            ("path", Node::string().describe("File or folder to search, relative to the root. Default: the root.").default_value(".")),
            ("glob", Node::string().describe("Only files whose path (relative to `path`) matches this glob, e.g. `**/*.rs`.")),
            ("case_insensitive", Node::boolean().describe("Ignore case. Default: false.").default_value(false)),
            ("max_results", Node::integer().minimum(1).describe("Most matches to return. Default: 1000.").default_value(1000)),
            ("include_ignored", Node::boolean().describe("Also search ignored and hidden files. Default: false.").default_value(false)),
        ]))
        .output(ValueSchema::new(
            Node::object([
                ("matches", Node::array(hit).required()),
                ("total", Node::integer().describe("How many lines matched in all.").required()),
                ("truncated", Node::boolean().describe("Whether matches was cut at max_results.").required()),
            ])
            .additional_properties(false),
        ))
        .present_call(|args| {
            let pattern = args.get("pattern").and_then(|p| p.as_str()).unwrap_or("");
            super::cards::search_call(format!("Search for /{pattern}/"), args)
        })
        .present_result(|args, outcome| {
            super::cards::grep_result(outcome).unwrap_or_else(|| {
                let pattern = args.get("pattern").and_then(|p| p.as_str()).unwrap_or("");
                super::cards::failed(format!("Search for /{pattern}/"), outcome)
            })
        })
        .execute(move |args, exec| {
            let root = root.clone();
            async move {
                let pattern = args.str("pattern").unwrap_or_default().to_owned();
                let base = args.str("path").unwrap_or(".").to_owned();
                let glob = args.str("glob").map(str::to_owned);
                let insensitive = args.get("case_insensitive").and_then(|v| v.as_bool()).unwrap_or(false);
                let max = args.get("max_results").and_then(|v| v.as_u64()).unwrap_or(1000) as usize;
                let include = args.get("include_ignored").and_then(|v| v.as_bool()).unwrap_or(false);
                blocking(exec.signal(), move |token| {
                    let regex = regex::RegexBuilder::new(&pattern)
                        .case_insensitive(insensitive)
                        .build()
                        .map_err(|e| ToolError::new(format!("invalid regular expression: {e}")))?;
                    let filter = match &glob {
                        None => None,
                        Some(g) => Some(
                            globset::GlobBuilder::new(g)
                                .literal_separator(true)
                                .build()
                                .map_err(|e| ToolError::new(format!("invalid glob {g:?}: {e}")))?
                                .compile_matcher(),
                        ),
                    };
                    search(&root, &regex, &base, filter.as_ref(), max, include, &token)
                })
                .await
            }
        })
        .build()
        .unwrap_or_else(|e| unreachable!("grep is well defined: {e}"))
}

fn search(
    root: &Root,
    regex: &regex::Regex,
    base: &str,
    filter: Option<&globset::GlobMatcher>,
    max: usize,
    include_ignored: bool,
    token: &tokio_util::sync::CancellationToken,
) -> Result<serde_json::Value, ToolError> {
    let start = root.resolve(base)?;
    let mut matches = Vec::new();
    let mut total = 0usize;
    let files: Box<dyn Iterator<Item = std::path::PathBuf>> = if start.is_file() {
        Box::new(std::iter::once(start.clone()))
    } else {
        Box::new(
            walker(&start, include_ignored)
                .filter_map(|e| e.ok())
                .filter_map(|e| {
                    let is_file = e.file_type().is_some_and(|t| t.is_file() || t.is_symlink());
                    is_file.then(|| e.into_path())
                }),
        )
    };
    for path in files {
        if token.is_cancelled() {
            return Err(ToolError::cancelled());
        }
        if let Some(f) = filter {
            let rel = path.strip_prefix(&start).unwrap_or(&path);
            if !f.is_match(rel) {
                continue;
            }
        }
        if path.is_symlink() && !root.contains_real(&path) {
            continue;
        }
        let Ok(mut file) = std::fs::File::open(&path) else {
            continue;
        };
        let mut head = [0u8; 8192];
        let n = file.read(&mut head).unwrap_or(0);
        if head[..n].contains(&0) {
            continue;
        }
        let reader = BufReader::new(head[..n].chain(file));
        let rel = root.relative(&path);
        for (index, line) in reader.split(b'\n').enumerate() {
            let Ok(line) = line else { break };
            let text = String::from_utf8_lossy(&line);
            let text = text.strip_suffix('\r').unwrap_or(&text);
            if regex.is_match(text) {
                total += 1;
                if matches.len() < max {
                    let shown: String = if text.chars().count() > MAX_LINE_CHARS {
                        text.chars()
                            .take(MAX_LINE_CHARS)
                            .chain(std::iter::once('…'))
                            .collect()
                    } else {
                        text.to_owned()
                    };
                    matches.push(json!({"path": rel, "line_number": index + 1, "line": shown}));
                }
            }
        }
    }
    Ok(json!({"matches": matches, "total": total, "truncated": total > matches.len()}))
}
