//! Generates Rust types for the tools of every fixture with `codemode_codegen::rust_types`,
//! as a host's build script would.

use std::path::Path;

use codemode_codegen::{ToolDecl, rust_types};
use serde_json::Value;

const FIXTURES: &[(&str, &str)] = &[
    ("builtin", "../fixtures/builtin.json"),
    (
        "server_everything",
        "../fixtures/mcp/server-everything.json",
    ),
    (
        "server_filesystem",
        "../fixtures/mcp/server-filesystem.json",
    ),
    ("server_memory", "../fixtures/mcp/server-memory.json"),
    ("adversarial", "../fixtures/schemas/adversarial.json"),
];

fn main() {
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    for (name, path) in FIXTURES {
        println!("cargo::rerun-if-changed={path}");
        let text = std::fs::read_to_string(path).expect("the fixture exists");
        let v: Value = serde_json::from_str(&text).expect("the fixture is JSON");
        let tools: Vec<ToolDecl> = v["tools"]
            .as_array()
            .expect("a tools array")
            .iter()
            .map(|t| ToolDecl {
                name: t["name"].as_str().unwrap_or_default().to_owned(),
                alias: None,
                description: t["description"].as_str().unwrap_or_default().to_owned(),
                annotations: Default::default(),
                input_schema: t["inputSchema"].clone(),
                output_schema: t.get("outputSchema").cloned().unwrap_or(Value::Bool(true)),
            })
            .collect();
        std::fs::write(
            Path::new(&out).join(format!("{name}.rs")),
            rust_types(&tools),
        )
        .expect("OUT_DIR is writable");
    }
}
