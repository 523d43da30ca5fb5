//! `glob`: paths matching a glob pattern.

use std::sync::Arc;

use serde_json::json;

use super::root::Root;
use super::{blocking, walker};
use crate::dispatch::{Tool, ToolError};
use crate::schema::{Node, ParameterSchema, ValueSchema};

pub(super) fn tool(root: Arc<Root>) -> Tool {
    Tool::builder("glob")
        .annotations(crate::dispatch::ToolAnnotations::read_only())
        .description(
            "Find files whose path matches a glob (`*` within a folder, `**` across folders, `{a,b}`, `[ab]`). \
             Paths are relative to `path`; files ignored by .gitignore and hidden files are skipped unless include_ignored.",
        )
        .parameters(ParameterSchema::new([
            ("pattern", Node::string().min_length(1).describe("Glob, e.g. `src/**/*.rs`.").required()),
            ("path", Node::string().describe("Folder to search, relative to the root. Default: the root.").default_value(".")),
            ("max_results", Node::integer().minimum(1).describe("Most paths to return. Default: 1000.").default_value(1000)),
            ("include_ignored", Node::boolean().describe("Also search ignored and hidden files. Default: false.").default_value(false)),
        ]))
        .output(ValueSchema::new(
            Node::object([
                ("matches", Node::array(Node::string()).describe("Matching file paths, relative to the root, sorted.").required()),
                ("total", Node::integer().describe("How many paths matched in all.").required()),
                ("truncated", Node::boolean().describe("Whether matches was cut at max_results.").required()),
            ])
            .additional_properties(false),
        ))
        .present_call(|args| {
            let pattern = args.get("pattern").and_then(|p| p.as_str()).unwrap_or("");
            super::cards::search_call(format!("Find files matching {pattern}"), args)
        })
        .present_result(|args, outcome| {
            super::cards::glob_result(outcome).unwrap_or_else(|| {
                let pattern = args.get("pattern").and_then(|p| p.as_str()).unwrap_or("");
                super::cards::failed(format!("Find files matching {pattern}"), outcome)
            })
        })
        .execute(move |args, exec| {
            let root = root.clone();
            async move {
                let pattern = args.str("pattern").unwrap_or_default().to_owned();
                let base = args.str("path").unwrap_or(".").to_owned();
                let max = args.get("max_results").and_then(|v| v.as_u64()).unwrap_or(1000) as usize;
                let include = args.get("include_ignored").and_then(|v| v.as_bool()).unwrap_or(false);
                blocking(exec.signal(), move |token| {
                    glob(&root, &pattern, &base, max, include, &token)
                })
                .await
            }
        })
        .build()
        .unwrap_or_else(|e| unreachable!("glob is well defined: {e}"))
}

fn glob(
    root: &Root,
    pattern: &str,
    base: &str,
    max: usize,
    include_ignored: bool,
    token: &tokio_util::sync::CancellationToken,
) -> Result<serde_json::Value, ToolError> {
    let matcher = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| ToolError::new(format!("invalid glob {pattern:?}: {e}")))?
        .compile_matcher();
    let dir = root.resolve(base)?;
    let mut matches = Vec::new();
    let mut total = 0usize;
    for entry in walker(&dir, include_ignored) {
        if token.is_cancelled() {
            return Err(ToolError::cancelled());
        }
        let Ok(entry) = entry else { continue };
        if !entry
            .file_type()
            .is_some_and(|t| t.is_file() || t.is_symlink())
        {
            continue;
        }
        let rel = entry.path().strip_prefix(&dir).unwrap_or(entry.path());
        if !matcher.is_match(rel) {
            continue;
        }
        if entry.path_is_symlink() && !root.contains_real(entry.path()) {
            continue;
        }
        total += 1;
        if matches.len() < max {
            matches.push(root.relative(entry.path()));
        }
    }
    Ok(json!({"matches": matches, "total": total, "truncated": total > matches.len()}))
}
