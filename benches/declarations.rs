//! Declaration figures: declarations for 1 000 tools with realistic schemas (goal ≤ 20 ms),
//! and the size of the declarations the model reads for server-everything's tools, ours
//! (compact layout) beside those of `@cloudflare/codemode` 0.5.6's generator, produced in
//! the same run (goal: ours at least 20 % smaller).
//!
//! `cargo bench --bench declarations` (runs `npm ci` in `benches/node` on first use).

use std::path::Path;
use std::process::Command;

use codemode::declarations::{Layout, ToolDecl};
use codemode::tool_alias;
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
    let dir = root().join("benches/node");
    if !dir.join("node_modules/@cloudflare/codemode").exists() {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .status()
            .map_err(|e| format!("npm: {e}"))?;
        if !status.success() {
            return Err(format!("npm ci in benches/node: {status}"));
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

fn sizes() {
    let path = "tests/fixtures/mcp/server-everything.json";
    let ours = declarations_with(&fixture(path), Layout::Compact).unwrap();
    match cloudflare(path) {
        Ok(theirs) => println!(
            "server-everything declarations: codemode (compact) {} bytes, @cloudflare/codemode 0.5.6 {} bytes: ours are {:.1} % smaller",
            ours.len(),
            theirs.len(),
            100.0 * (1.0 - ours.len() as f64 / theirs.len() as f64)
        ),
        Err(e) => println!(
            "server-everything declarations: codemode (compact) {} bytes; @cloudflare/codemode could not run: {e}",
            ours.len()
        ),
    }
}

fn generation(c: &mut Criterion) {
    sizes();
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
