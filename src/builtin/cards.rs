//! The presentation cards of the built-in file tools: reads are generic cards with a
//! location; `glob` and `grep` results are search cards.

use serde_json::Value;

use crate::dispatch::{CallCard, Location, Outcome, ResultCard, SearchGroup, SearchMatch};

fn text(args: &Value, key: &str, default: &str) -> String {
    args.get(key)
        .and_then(Value::as_str)
        .unwrap_or(default)
        .to_owned()
}

pub(super) fn read_call(args: &Value) -> CallCard {
    let path = text(args, "path", ".");
    CallCard::Generic {
        title: format!("Read {path}"),
        kind: "read".into(),
        raw_input: args.clone(),
        locations: vec![Location {
            path,
            line: args.get("offset").and_then(Value::as_u64),
        }],
    }
}

pub(super) fn read_result(args: &Value, outcome: &Outcome) -> ResultCard {
    let path = text(args, "path", ".");
    let (text, line) = match outcome.value() {
        Some(v) => {
            let start = v["start_line"].as_u64().unwrap_or(1);
            let end = v["end_line"].as_u64().unwrap_or(start);
            let total = v["total_lines"].as_u64().unwrap_or(0);
            (format!("lines {start}–{end} of {total}"), Some(start))
        }
        None => (outcome.text(), None),
    };
    ResultCard::Generic {
        title: format!("Read {path}"),
        text,
        is_error: outcome.is_error(),
        locations: vec![Location { path, line }],
    }
}

pub(super) fn list_call(args: &Value) -> CallCard {
    let path = text(args, "path", ".");
    CallCard::Generic {
        title: format!("List {path}"),
        kind: "read".into(),
        raw_input: args.clone(),
        locations: vec![Location { path, line: None }],
    }
}

pub(super) fn search_call(title: String, args: &Value) -> CallCard {
    CallCard::Generic {
        title,
        kind: "search".into(),
        raw_input: args.clone(),
        locations: vec![Location {
            path: text(args, "path", "."),
            line: None,
        }],
    }
}

pub(super) fn glob_result(outcome: &Outcome) -> Option<ResultCard> {
    let v = outcome.value()?;
    Some(ResultCard::Search {
        groups: Vec::new(),
        paths: v["matches"]
            .as_array()?
            .iter()
            .filter_map(|p| p.as_str().map(str::to_owned))
            .collect(),
        truncated: v["truncated"].as_bool().unwrap_or(false),
        total: v["total"].as_u64().unwrap_or(0),
    })
}

pub(super) fn grep_result(outcome: &Outcome) -> Option<ResultCard> {
    let v = outcome.value()?;
    let mut groups: Vec<SearchGroup> = Vec::new();
    for m in v["matches"].as_array()? {
        let path = m["path"].as_str()?.to_owned();
        let hit = SearchMatch {
            line: m["line_number"].as_u64()?,
            text: m["line"].as_str()?.to_owned(),
        };
        match groups.last_mut() {
            Some(g) if g.path == path => g.matches.push(hit),
            _ => groups.push(SearchGroup {
                path,
                matches: vec![hit],
            }),
        }
    }
    Some(ResultCard::Search {
        groups,
        paths: Vec::new(),
        truncated: v["truncated"].as_bool().unwrap_or(false),
        total: v["total"].as_u64().unwrap_or(0),
    })
}

/// The generic card for a failed call.
pub(super) fn failed(title: String, outcome: &Outcome) -> ResultCard {
    ResultCard::Generic {
        title,
        text: outcome.text(),
        is_error: true,
        locations: Vec::new(),
    }
}
