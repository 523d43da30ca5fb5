//! Declaration figures: declarations for 1 000 tools with realistic schemas (goal ≤ 20 ms),
//! and the README's token table: what the model reads, in real tokens (`o200k_base`,
//! `cl100k_base`), `run_code`'s description with and without the index, and the
//! declarations of the three MCP fixtures beside those of `@cloudflare/codemode` 0.5.6's
//! generator, produced in the same run.
//!
//! `cargo bench --bench declarations` (runs `npm ci` in `tests/node` on first use).

use std::path::Path;
use std::process::Command;

use codemode::declarations::{Layout, ToolDecl};
use codemode::run_code::{RunCodeConfig, run_code_tool};
use codemode::tokens::{Encoding, count_tokens};
use codemode::{FileTools, Registry, tool_alias};
use codemode_codegen::declarations_with;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;

#[path = "support/realistic.rs"]
mod realistic;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// 1 000 tools: the realistic 20-field arguments (nested arrays of objects, enums,
/// formats, patterns) under varied names and descriptions, with a structured output.
fn thousand_tools() -> Vec<ToolDecl> {
    let (params, _) = realistic::realistic();
    let input = params.to_json_schema();
    let output = serde_json::json!({"type": "object", "properties": {
        "id": {"type": "string", "description": "The order's id."},
        "total": {"type": "number", "minimum": 0},
        "lines": {"type": "array", "items": {"type": "object", "properties": {"sku": {"type": "string"}, "ok": {"type": "boolean"}}, "required": ["sku"], "additionalProperties": false}}
    }, "required": ["id"], "additionalProperties": false});
    (0..1000)
        .map(|i| {
            let name = format!("orders-{i}.submit");
            ToolDecl {
                alias: Some(tool_alias(&name)),
                description: format!(
                    "Submit order batch {i}: validates, prices and queues the order for shipping."
                ),
                name,
                annotations: Default::default(),
                input_schema: input.clone(),
                output_schema: output.clone(),
            }
        })
        .collect()
}

fn fixture(path: &str) -> Vec<ToolDecl> {
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join(path)).unwrap()).unwrap();
    codemode::declarations::mcp_tool_decls(&v)
}

/// The output of Cloudflare's generator for a fixture, or why it could not run.
fn cloudflare(fixture: &str) -> Result<String, String> {
    let dir = root().join("tests/node");
    if !dir.join("node_modules/@cloudflare/codemode").exists() {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .status()
            .map_err(|e| format!("npm: {e}"))?;
        if !status.success() {
            return Err(format!("npm ci in tests/node: {status}"));
        }
    }
    let out = Command::new("node")
        .arg("cloudflare-declarations.mjs")
        .arg(root().join(fixture))
        .current_dir(&dir)
        .output()
        .map_err(|e| format!("node: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// One row of the token table: the text's tokens in both vocabularies, and its bytes.
fn row(what: &str, text: &str, versus: Option<&str>) {
    let o = count_tokens(text, Encoding::O200kBase);
    let c = count_tokens(text, Encoding::Cl100kBase);
    let ratio = |ours: usize, theirs: usize| {
        format!(
            " ({:.0} % fewer)",
            100.0 * (1.0 - ours as f64 / theirs as f64)
        )
    };
    let (ro, rc) = match versus {
        Some(v) => (
            ratio(o, count_tokens(v, Encoding::O200kBase)),
            ratio(c, count_tokens(v, Encoding::Cl100kBase)),
        ),
        None => (String::new(), String::new()),
    };
    println!("| {what} | {o}{ro} | {c}{rc} | {} |", text.len());
}

/// The description of `run_code` in `registry`.
fn run_code_description(registry: &Registry) -> String {
    registry.get("run_code").unwrap().description_in(registry)
}

/// Prints the README's token table: what the model reads, in `o200k_base` and
/// `cl100k_base` tokens.
fn tokens() {
    println!("| text | o200k_base tokens | cl100k_base tokens | bytes |");
    println!("| --- | --- | --- | --- |");
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::new();
    let mut handles = vec![
        registry
            .register(run_code_tool(RunCodeConfig::default()))
            .unwrap(),
    ];
    let files = FileTools::new(dir.path()).unwrap();
    handles.extend(files.register(&registry).unwrap());
    for tool in files.write_tools().into_iter().chain([files.shell_tool()]) {
        handles.push(registry.register(tool).unwrap());
    }
    row(
        "`run_code` description, built-in tools (declared in full)",
        &run_code_description(&registry),
        None,
    );
    for (server, path) in FIXTURES {
        let text = std::fs::read_to_string(root().join(path)).unwrap();
        let list: Value = serde_json::from_str(&text).unwrap();
        handles.extend(codemode::bench_support::register_listed_tools(
            &registry, server, &list,
        ));
    }
    let full = codemode::declarations::declarations(&registry, Layout::Compact).unwrap();
    row(
        "declarations of the built-ins and the three servers",
        &full,
        None,
    );
    row(
        "`run_code` description, built-ins and the three servers (index, over the 2 000-token budget)",
        &run_code_description(&registry),
        None,
    );
    for (server, path) in FIXTURES {
        let ours = declarations_with(&fixture(path), Layout::Compact).unwrap();
        match cloudflare(path) {
            Ok(theirs) => {
                row(
                    &format!("server-{server}: `@cloudflare/codemode` 0.5.6"),
                    &theirs,
                    None,
                );
                row(
                    &format!("server-{server}: codemode (compact)"),
                    &ours,
                    Some(&theirs),
                );
            }
            Err(e) => {
                row(&format!("server-{server}: codemode (compact)"), &ours, None);
                println!("(server-{server}: @cloudflare/codemode could not run: {e})");
            }
        }
    }
    drop(handles);
}

const FIXTURES: [(&str, &str); 3] = [
    ("everything", "tests/fixtures/mcp/server-everything.json"),
    ("filesystem", "tests/fixtures/mcp/server-filesystem.json"),
    ("memory", "tests/fixtures/mcp/server-memory.json"),
];

fn generation(c: &mut Criterion) {
    tokens();
    let tools = thousand_tools();
    let mut group = c.benchmark_group("declarations of 1000 realistic tools");
    group.sample_size(20);
    for layout in [Layout::Pretty, Layout::Compact] {
        group.bench_function(format!("{layout:?}"), |b| {
            b.iter(|| declarations_with(std::hint::black_box(&tools), layout).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, generation);
criterion_main!(benches);
