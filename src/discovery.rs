//! Progressive discovery: when the declarations of the tools a program sees are longer than
//! a budget (in `o200k_base` tokens, see [`crate::tokens`]), `run_code`'s description shows
//! a compact index instead (each tool's name and a one-line summary, grouped by MCP server),
//! and the program discovers tools at run time with two functions of the `tools` object:
//!
//! - `tools.$search(query, limit?)` → `Promise<{ name: string; description: string }[]>`:
//!   the `limit` (default [`DEFAULT_SEARCH_LIMIT`], at most [`MAX_SEARCH_LIMIT`]) tools
//!   that best match the words of `query`, ranked with BM25 over each tool's name,
//!   description and parameter names (English stemming and stop words, the `bm25` crate);
//! - `tools.$describe(names)` (a name or an array of names, or aliases) →
//!   `Promise<string>`: the TypeScript declarations of just those tools, in the same
//!   compact form as the full declarations.
//!
//! Both names start with `$`, and no tool may be registered as `$search` or `$describe`
//! ([`crate::RESERVED_TOOL_NAMES`]), so they never hide a tool. They are not tools: they
//! make no call, and a run's `calls` does not list them. Calling a tool that was never
//! described works exactly as calling one that was.

use std::collections::BTreeMap;

use bm25::{Document, Language, SearchEngine, SearchEngineBuilder};

use crate::declarations::{Layout, ToolDecl};

/// The budget of `run_code`'s description for declarations, in `o200k_base` tokens, when
/// the configuration gives none: above it the description carries the index.
pub const DEFAULT_TOOL_BUDGET: usize = 2_000;

/// The name of the search function on `tools`.
pub const SEARCH: &str = "$search";

/// The name of the describe function on `tools`.
pub const DESCRIBE: &str = "$describe";

/// Results `tools.$search` gives when the program asks for no number.
pub const DEFAULT_SEARCH_LIMIT: usize = 5;

/// Most results `tools.$search` gives.
pub const MAX_SEARCH_LIMIT: usize = 50;

/// Longest one-line summary in the index, in characters (before the `…`).
const SUMMARY_CHARS: usize = 80;

/// What `run_code`'s description says of the tools (`deferred[i]` for `tools[i]`): the
/// compact declarations of the tools that are not deferred, when they fit in `budget`
/// `o200k_base` tokens, followed by the [`index`] of the deferred ones; past the budget,
/// the index of them all.
pub fn tools_text(tools: &[ToolDecl], deferred: &[bool], budget: usize) -> String {
    let (listed, declared): (Vec<_>, Vec<_>) = tools
        .iter()
        .zip(deferred.iter().chain(std::iter::repeat(&false)))
        .partition(|(_, d)| **d);
    let declared: Vec<ToolDecl> = declared.into_iter().map(|(t, _)| t.clone()).collect();
    let d = match codemode_codegen::declarations_with(&declared, Layout::Compact) {
        Ok(d) => d,
        Err(e) => return format!("(The tools' declarations could not be made: {e}.)"),
    };
    // Past the budget, or when every tool is deferred, the index of them all.
    if declared.is_empty() || crate::tokens::over_budget(&d, budget) {
        return index(tools, false);
    }
    // A fence longer than any run of backticks in the declarations (a description may
    // hold one), so nothing closes it early (CommonMark).
    let longest = d.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let mut text = format!(
        "The tools, as TypeScript declarations (`tools.<name>(args)` for every key of ToolArgsMap; a name that is not an identifier is `tools[\"name\"]` or its alias):\n{fence}ts\n{d}{fence}"
    );
    if !listed.is_empty() {
        let listed: Vec<ToolDecl> = listed.into_iter().map(|(t, _)| t.clone()).collect();
        text.push_str("\n\n");
        text.push_str(&index(&listed, true));
    }
    text
}

/// The text `run_code`'s description shows in place of declarations: how to discover,
/// then the tools' names with a one-line summary each, grouped by MCP server (tools named
/// `SERVER.tool`) after the others. `more` when other tools are declared above it.
pub fn index(tools: &[ToolDecl], more: bool) -> String {
    let mut groups: BTreeMap<Option<&str>, Vec<&ToolDecl>> = BTreeMap::new();
    for t in tools {
        let group = t
            .name
            .split_once('.')
            .map(|(g, _)| g)
            .filter(|g| !g.is_empty());
        groups.entry(group).or_default().push(t);
    }
    let n = tools.len();
    let lead = match (more, n) {
        (true, 1) => "1 more tool is listed by name only.".to_owned(),
        (true, _) => format!("{n} more tools are listed by name only."),
        (false, 1) => {
            "There is 1 tool, listed by name (its declarations pass the budget).".to_owned()
        }
        (false, _) => {
            format!("There are {n} tools: too many to declare here, so they are listed by name.")
        }
    };
    let mut out = format!(
        "{lead} Inside your program, `await tools.$search(\"words\", limit?)` gives the best matches as [{{name, description}}] and `await tools.$describe([\"name\", …])` gives their TypeScript declarations as a string (console.log it, then call the tools in a later run or the same one). Any listed tool can be called without describing it first; tools[\"a-b.c\"] is also tools.a_b_c.\n"
    );
    for (group, mut list) in groups {
        list.sort_by(|a, b| a.name.cmp(&b.name));
        match group {
            Some(g) => out.push_str(&format!("{g} (MCP server):\n")),
            None => out.push_str("tools:\n"),
        }
        for t in list {
            out.push_str("- ");
            out.push_str(&t.name);
            let summary = summary(&t.tagged_description());
            if !summary.is_empty() {
                out.push_str(": ");
                out.push_str(&summary);
            }
            out.push('\n');
        }
    }
    out
}

/// The first sentence of `description`, at most [`SUMMARY_CHARS`] characters (cut at a
/// word, with `…`), on one line.
fn summary(description: &str) -> String {
    let flat: String = description.split_whitespace().collect::<Vec<_>>().join(" ");
    let end = flat
        .match_indices(". ")
        .next()
        .map_or(flat.len(), |(i, _)| i + 1);
    let sentence = &flat[..end];
    if sentence.chars().count() <= SUMMARY_CHARS {
        return sentence.to_owned();
    }
    let cut: String = sentence.chars().take(SUMMARY_CHARS).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
    format!("{}…", cut.trim_end_matches([',', ';', ':']))
}

/// The words of an identifier: `read_text_file` → `read text file`, `getFileInfo` →
/// `get File Info`, `github.search` → `github search`.
fn words(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    let mut prev_lower = false;
    for c in name.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower {
                out.push(' ');
            }
            prev_lower = c.is_lowercase() || c.is_numeric();
            out.push(c);
        } else {
            out.push(' ');
            prev_lower = false;
        }
    }
    out
}

/// What a tool is searched by: its name's words (twice: a name says the most), its
/// description, and its parameters' names.
fn searchable(t: &ToolDecl) -> String {
    let name = words(&t.name);
    let mut text = format!("{name} {name} {}", t.description);
    if let Some(props) = t
        .input_schema
        .get("properties")
        .and_then(serde_json::Value::as_object)
    {
        for key in props.keys() {
            text.push(' ');
            text.push_str(&words(key));
        }
    }
    text
}

/// The tools that best match `query`, best first, at most `limit` (BM25; ties keep the
/// tools' order). Tools with no word in common with the query are left out.
pub fn search<'t>(tools: &'t [ToolDecl], query: &str, limit: usize) -> Vec<&'t ToolDecl> {
    if tools.is_empty() || limit == 0 {
        return Vec::new();
    }
    rank(&engine(tools), tools, query, limit)
}

/// The BM25 index of `tools` (document `i` is `tools[i]`).
fn engine(tools: &[ToolDecl]) -> SearchEngine<usize> {
    let docs = tools
        .iter()
        .enumerate()
        .map(|(i, t)| Document::new(i, searchable(t)));
    SearchEngineBuilder::<usize>::with_documents(Language::English, docs).build()
}

/// The tools of `engine` (built over `tools`) that best match `query`, best first.
fn rank<'t>(
    engine: &SearchEngine<usize>,
    tools: &'t [ToolDecl],
    query: &str,
    limit: usize,
) -> Vec<&'t ToolDecl> {
    let mut hits = engine.search(&words(query), None);
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.document.id.cmp(&b.document.id))
    });
    hits.into_iter()
        .take(limit)
        .map(|h| &tools[h.document.id])
        .collect()
}

/// The tools a run sees, indexed for search: made on a run's first `$search` or
/// `$describe` and kept for the rest of the run.
pub(crate) struct Catalog {
    tools: Vec<ToolDecl>,
    engine: Option<SearchEngine<usize>>,
}

impl Catalog {
    /// The catalog of `tools` (indexed on the first search).
    pub(crate) fn new(tools: Vec<ToolDecl>) -> Catalog {
        Catalog {
            tools,
            engine: None,
        }
    }

    /// As [`search`], over the catalog's tools.
    pub(crate) fn search(&mut self, query: &str, limit: usize) -> Vec<&ToolDecl> {
        if self.tools.is_empty() || limit == 0 {
            return Vec::new();
        }
        let engine = self.engine.get_or_insert_with(|| engine(&self.tools));
        rank(engine, &self.tools, query, limit)
    }

    /// As [`describe`], over the catalog's tools.
    pub(crate) fn describe(&self, names: &[String]) -> Result<String, String> {
        describe(&self.tools, names)
    }
}

/// The compact TypeScript declarations of the tools named in `names` (names or aliases),
/// in the form of the full declarations.
///
/// # Errors
/// A message naming each name that is no tool, with the closest names; or the generator's
/// error.
pub fn describe(tools: &[ToolDecl], names: &[String]) -> Result<String, String> {
    let mut chosen: Vec<ToolDecl> = Vec::with_capacity(names.len());
    let mut unknown = Vec::new();
    for name in names {
        match tools
            .iter()
            .find(|t| &t.name == name || t.alias.as_deref() == Some(name.as_str()))
        {
            Some(t) if !chosen.iter().any(|c| c.name == t.name) => chosen.push(t.clone()),
            Some(_) => {}
            None if unknown.contains(&name.as_str()) => {}
            None => unknown.push(name.as_str()),
        }
    }
    if !unknown.is_empty() {
        use crate::dispatch::registry::{tool_list, unknown_tool_phrase};
        let all: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        let mut phrases: Vec<String> = unknown
            .iter()
            .take(10)
            .map(|n| unknown_tool_phrase(n, &refs))
            .collect();
        if unknown.len() > 10 {
            phrases.push(format!("And {} more unknown names", unknown.len() - 10));
        }
        let sentences: Vec<String> = phrases
            .into_iter()
            .map(|p| if p.ends_with('?') { p } else { format!("{p}.") })
            .collect();
        return Err(format!(
            "{} Available tools: {}",
            sentences.join(" "),
            tool_list(&all)
        ));
    }
    if chosen.is_empty() {
        return Err("name at least one tool to describe".to_owned());
    }
    codemode_codegen::declarations_with(&chosen, Layout::Compact).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deferred_tools_follow_the_declared_ones_and_alone_are_the_whole_index() {
        let tool = |name: &str| ToolDecl {
            name: name.to_owned(),
            alias: None,
            description: format!("Does {name}. More."),
            annotations: Default::default(),
            input_schema: serde_json::json!({"type": "object"}),
            output_schema: serde_json::json!(true),
        };
        let tools = [tool("a"), tool("s.b")];
        let mixed = tools_text(&tools, &[false, true], usize::MAX);
        assert!(
            mixed.contains("interface ToolArgsMap {\n// Does a. More.\na: {};\n}"),
            "{mixed}"
        );
        assert!(mixed.ends_with("1 more tool is listed by name only. Inside your program, `await tools.$search(\"words\", limit?)` gives the best matches as [{name, description}] and `await tools.$describe([\"name\", …])` gives their TypeScript declarations as a string (console.log it, then call the tools in a later run or the same one). Any listed tool can be called without describing it first; tools[\"a-b.c\"] is also tools.a_b_c.\ns (MCP server):\n- s.b: Does s.b.\n"), "{mixed}");
        let all = tools_text(&tools, &[true, true], usize::MAX);
        assert!(
            all.starts_with("There are 2 tools: too many to declare here"),
            "{all}"
        );
        assert!(
            all.contains("tools:\n- a: Does a.\ns (MCP server):\n- s.b: Does s.b.\n"),
            "{all}"
        );
        assert_eq!(tools_text(&tools, &[false, false], 0), all);
    }

    #[test]
    fn summaries_are_one_short_sentence() {
        assert_eq!(summary("Reads a file.  Then more."), "Reads a file.");
        assert_eq!(summary("no stop"), "no stop");
        let long = "Get a detailed listing of all files and directories in a specified path, including sizes and more words here";
        let s = summary(long);
        assert!(
            s.ends_with('…') && s.chars().count() <= SUMMARY_CHARS + 1,
            "{s}"
        );
        assert_eq!(words("read_text_file"), "read text file");
        assert_eq!(words("getFileInfo"), "get File Info");
    }
}
