//! TypeScript declarations: snapshots of every fixture, and the real
//! TypeScript compiler as the judge of the declarations and of programs written against
//! them.

use std::path::{Path, PathBuf};

use codemode::declarations::{Layout, SANDBOX_GLOBALS, ToolDecl};
use codemode::{FileTools, Registry};
use codemode_codegen::{declarations, declarations_with};
use serde_json::Value;

use crate::support::tsc;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The tools of a fixture file (`{"tools": [{name, description, inputSchema,
/// outputSchema?}]}`, the shape of an MCP `tools/list` answer).
pub fn fixture(path: &str) -> Vec<ToolDecl> {
    let text = std::fs::read_to_string(root().join(path)).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    codemode::declarations::mcp_tool_decls(&v)
}

/// The built-in file tools as a program sees them.
pub fn builtin() -> Vec<ToolDecl> {
    let registry = Registry::new();
    let dir = tempfile::tempdir().unwrap();
    let _handles = FileTools::new(dir.path())
        .unwrap()
        .register(&registry)
        .unwrap();
    codemode::declarations::tool_decls(&registry)
}

const FIXTURES: &[(&str, &str)] = &[
    (
        "server_everything",
        "tests/fixtures/mcp/server-everything.json",
    ),
    (
        "server_filesystem",
        "tests/fixtures/mcp/server-filesystem.json",
    ),
    ("server_memory", "tests/fixtures/mcp/server-memory.json"),
    ("adversarial", "tests/fixtures/schemas/adversarial.json"),
];

fn all_fixtures() -> Vec<(&'static str, Vec<ToolDecl>)> {
    let mut out = vec![("builtin", builtin())];
    out.extend(FIXTURES.iter().map(|(n, p)| (*n, fixture(p))));
    out
}

#[test]
fn the_adversarial_fixture_has_at_least_30_tools() {
    assert!(fixture("tests/fixtures/schemas/adversarial.json").len() >= 30);
}

#[test]
fn declarations_of_every_fixture_match_their_snapshots() {
    for (name, tools) in all_fixtures() {
        let pretty = declarations(&tools).unwrap();
        insta::assert_snapshot!(format!("{name}.d.ts"), pretty);
        let compact = declarations_with(&tools, Layout::Compact).unwrap();
        insta::assert_snapshot!(format!("{name}.compact.d.ts"), compact);
    }
}

#[test]
fn the_same_tools_give_the_same_bytes_in_any_order() {
    let mut tools = fixture("tests/fixtures/schemas/adversarial.json");
    let a = declarations(&tools).unwrap();
    tools.reverse();
    assert_eq!(declarations(&tools).unwrap(), a);
    assert!(a.starts_with("// @generated"));
}

#[test]
fn the_typescript_compiler_accepts_the_declarations_of_every_fixture() {
    for (name, tools) in all_fixtures() {
        for layout in [Layout::Pretty, Layout::Compact] {
            let d = declarations_with(&tools, layout).unwrap();
            let (ok, diagnostics) = tsc(&[("tools.d.ts", &d), ("globals.d.ts", SANDBOX_GLOBALS)]);
            assert!(ok, "{name} ({layout:?}):\n{diagnostics}\n{d}");
        }
    }
}

/// An MCP server's tools (`everything.get-sum`: a `.` and a `-`) are reachable by their
/// aliases only (`tools.everything_get_sum`), in both layouts: no other name type-checks.
#[test]
fn names_with_dots_and_dashes_have_exactly_their_aliases() {
    let tools: Vec<ToolDecl> = fixture("tests/fixtures/mcp/server-everything.json")
        .into_iter()
        .map(|mut t| {
            t.name = format!("everything.{}", t.name);
            t.alias = Some(codemode::tool_alias(&t.name));
            t
        })
        .collect();
    let good = "async function f() { await tools.everything_get_sum({ a: 1, b: 2 }); await tools[\"everything.get-sum\"]({ a: 1, b: 2 }); await tools.everything_trigger_long_running_operation(); }\n";
    let bad = "async function g() { await tools.everything_sum({ a: 1, b: 2 }); }\nasync function h() { await tools.everything_get_get_sum({ a: 1, b: 2 }); }\n";
    for layout in [Layout::Pretty, Layout::Compact] {
        let d = declarations_with(&tools, layout).unwrap();
        let (ok, diagnostics) = tsc(&[
            ("tools.d.ts", &d),
            ("globals.d.ts", SANDBOX_GLOBALS),
            ("good.ts", good),
        ]);
        assert!(ok, "{layout:?}:\n{diagnostics}");
        let (ok, diagnostics) = tsc(&[
            ("tools.d.ts", &d),
            ("globals.d.ts", SANDBOX_GLOBALS),
            ("bad.ts", bad),
        ]);
        assert!(!ok, "{layout:?}: the bogus aliases type-checked");
        assert_eq!(
            diagnostics
                .lines()
                .filter(|l| l.starts_with("bad.ts("))
                .count(),
            2,
            "{layout:?}:\n{diagnostics}"
        );
    }
}

/// Names whose alias is not the `-`/`.` rule's (a leading digit, a non-ASCII letter), a
/// name of 60 dashes, a tool named `new`, and a repeated shape under `parameters` (the name
/// of a TypeScript utility type): both layouts type-check exactly the names a run accepts.
#[test]
fn odd_names_type_check_exactly_as_a_run_accepts_them() {
    let long = vec!["a"; 61].join("-");
    let shape = serde_json::json!({"type": "object", "properties": {"parameters": {
        "type": "object",
        "properties": {"first": {"type": "string"}, "second": {"type": "string"}, "third": {"type": "number"}},
    }}});
    let tools: Vec<ToolDecl> = [
        "get-sum",
        "1-a",
        "café-menu",
        long.as_str(),
        "new",
        "p1",
        "p2",
        "minp",
    ]
    .into_iter()
    .map(|name| ToolDecl {
        name: name.to_owned(),
        alias: Some(codemode::tool_alias(name)),
        description: format!("Does {name}."),
        annotations: Default::default(),
        input_schema: match name {
            "p1" | "p2" => shape.clone(),
            // `{}` has the type's shape, but the schema refuses it: a call without
            // arguments fails at run time, so it must not type-check.
            "minp" => serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}}, "minProperties": 1}),
            _ => serde_json::json!({"type": "object"}),
        },
        output_schema: serde_json::json!(true),
    })
    .collect();
    let long_alias = codemode::tool_alias(&long);
    let good = format!(
        "async function f() {{ await tools.get_sum(); await tools._1_a(); await tools[\"1-a\"](); await tools.caf__menu(); await tools[\"café-menu\"](); await tools.{long_alias}(); await tools.new(); await tools.p1({{ parameters: {{ first: \"x\" }} }}); await tools.p2(); await tools.minp({{ a: \"x\" }}); }}\n"
    );
    let bad = "async function g() { await tools[\"1_a\"](); }\nasync function h() { await tools[\"café_menu\"](); }\nasync function i() { await tools.minp(); }\n";
    for layout in [Layout::Pretty, Layout::Compact] {
        let d = declarations_with(&tools, layout).unwrap();
        if layout == Layout::Compact {
            assert!(d.contains("type Parameters2 = {"), "{d}");
        }
        let files = |program: &'static str, text: &str| {
            tsc(&[
                ("tools.d.ts", &d),
                ("globals.d.ts", SANDBOX_GLOBALS),
                (program, text),
            ])
        };
        let (ok, diagnostics) = files("good.ts", &good);
        assert!(ok, "{layout:?}:\n{diagnostics}\n{d}");
        let (ok, diagnostics) = files("bad.ts", bad);
        assert!(!ok, "{layout:?}: a name no run accepts type-checked\n{d}");
        assert_eq!(
            diagnostics
                .lines()
                .filter(|l| l.starts_with("bad.ts("))
                .count(),
            3,
            "{layout:?}:\n{diagnostics}"
        );
    }
}

struct Program {
    file: String,
    text: String,
    /// `None` when it must type-check; else the code and `line:column`.
    expect: Option<(String, String)>,
}

fn programs() -> Vec<Program> {
    let dir = root().join("tests/programs/typecheck");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let first = text.lines().next().unwrap_or("");
            let expect = first.strip_prefix("// expect: ").unwrap_or_else(|| {
                panic!(
                    "{} must start with `// expect: ok` or `// expect: TSxxxx line:col`",
                    p.display()
                )
            });
            let expect = (expect != "ok").then(|| {
                let (code, at) = expect.split_once(' ').unwrap();
                (code.to_owned(), at.to_owned())
            });
            Program {
                file: p.file_name().unwrap().to_string_lossy().into_owned(),
                text,
                expect,
            }
        })
        .collect()
}

#[test]
fn programs_type_check_or_fail_with_the_expected_diagnostic() {
    let mut tools = builtin();
    tools.extend(fixture("tests/fixtures/schemas/adversarial.json"));
    let programs = programs();
    assert!(programs.iter().filter(|p| p.expect.is_none()).count() >= 3);
    assert!(programs.iter().filter(|p| p.expect.is_some()).count() >= 3);
    // Each program is the body of an async function, as in the sandbox; the wrapper opens
    // on the program's first line (a comment), so lines and columns stay the program's.
    let wrapped: Vec<(String, String)> = programs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (
                p.file.clone(),
                format!("async function __program{i}() {{ {}\n}}\n", p.text),
            )
        })
        .collect();
    // The same diagnostics whichever layout the program is checked against.
    for layout in [Layout::Pretty, Layout::Compact] {
        let d = declarations_with(&tools, layout).unwrap();
        let mut files: Vec<(&str, &str)> =
            vec![("tools.d.ts", &d), ("globals.d.ts", SANDBOX_GLOBALS)];
        files.extend(wrapped.iter().map(|(n, t)| (n.as_str(), t.as_str())));
        let (_, diagnostics) = tsc(&files);
        for p in &programs {
            let mine: Vec<&str> = diagnostics
                .lines()
                .filter(|l| l.starts_with(&format!("{}(", p.file)))
                .collect();
            match &p.expect {
                None => assert!(
                    mine.is_empty(),
                    "{} must type-check ({layout:?}):\n{}",
                    p.file,
                    mine.join("\n")
                ),
                Some((code, at)) => {
                    let (line, col) = at.split_once(':').unwrap();
                    let want = format!("{}({line},{col}): error {code}:", p.file);
                    assert!(
                        mine.len() == 1 && mine[0].starts_with(&want),
                        "{} ({layout:?}): expected `{want}`, got:\n{}",
                        p.file,
                        mine.join("\n")
                    );
                }
            }
        }
        assert!(!diagnostics.contains("tools.d.ts("), "{diagnostics}");
    }
}

/// `tests/fixtures/builtin.json`: the built-in tools' schemas in the fixture format, for
/// the Rust-types crate's build script (which cannot build the runtime). Kept current here;
/// `CODEMODE_UPDATE_EXPECT=1` rewrites it.
#[test]
fn the_builtin_fixture_matches_the_builtin_tools() {
    let tools: Vec<Value> = builtin()
        .into_iter()
        .map(|t| {
            let a = t.annotations;
            let hints: serde_json::Map<String, Value> = [
                ("readOnlyHint", a.read_only),
                ("destructiveHint", a.destructive),
                ("openWorldHint", a.open_world),
            ]
            .into_iter()
            .filter_map(|(k, v)| Some((k.to_owned(), Value::Bool(v?))))
            .collect();
            serde_json::json!({
                "name": t.name,
                "description": t.description,
                "annotations": hints,
                "inputSchema": t.input_schema,
                "outputSchema": t.output_schema,
            })
        })
        .collect();
    let text =
        serde_json::to_string_pretty(&serde_json::json!({"server": "builtin", "tools": tools}))
            .unwrap()
            + "\n";
    let path = root().join("tests/fixtures/builtin.json");
    if std::env::var_os("CODEMODE_UPDATE_EXPECT").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(&path).unwrap_or_default(),
        text,
        "tests/fixtures/builtin.json is stale: run with CODEMODE_UPDATE_EXPECT=1"
    );
}
