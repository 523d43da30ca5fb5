//! `codemode check` and `check_program`: static diagnostics with positions, and
//! the real compiler with `--tsc`.

use std::process::Command;

use codemode::check::{DiagnosticKind, check_program};
use codemode::schema::{Node, ParameterSchema};
use codemode::{FileTools, Registry};
use serde_json::json;

use crate::support::{node_modules, test_tool};

/// The file tools, and `order` with a closed nested object and an enum.
fn registry() -> (Registry, Vec<codemode::ToolHandle>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::new();
    let mut handles = FileTools::new(dir.path())
        .unwrap()
        .register(&registry)
        .unwrap();
    let order = test_tool("place-order")
        .parameters(ParameterSchema::new([
            (
                "item",
                Node::object([
                    ("sku", Node::string().required()),
                    ("count", Node::integer().minimum(1)),
                ])
                .additional_properties(false)
                .required(),
            ),
            ("speed", Node::string().string_enum(["normal", "express"])),
        ]))
        .returns(json!("ok"));
    handles.push(registry.register(order).unwrap());
    (registry, handles, dir)
}

fn found(source: &str) -> Vec<(u32, u32, DiagnosticKind, String)> {
    let (registry, _h, _d) = registry();
    check_program(source, &registry)
        .into_iter()
        .map(|d| (d.line, d.column, d.kind, d.message))
        .collect()
}

#[test]
fn a_clean_program_has_no_diagnostics() {
    let source = "const f = await tools.read_file({path: 'a', limit: 3});\n\
                  const p = 'x';\n\
                  await tools.read_file({path: p, ...{}});\n\
                  await tools.place_order({item: {sku: 'A-1', count: 2}, speed: 'express'});\n\
                  await tools['place-order']({item: {sku: 'B'}, extra_root_key: 1});\n\
                  await tools.list_dir();\n\
                  return f.content;";
    assert_eq!(found(source), []);
}

#[test]
fn every_kind_is_reported_with_its_position() {
    let source = "await tools.read_file({ path: 42 });\n\
                  await tools.reed_file({ path: 'a' });\n\
                  await tools.read_file({ offset: 1 });\n\
                  await tools.place_order({ item: { sku: 'A', cuont: 2 } });\n\
                  await tools.place_order({ item: { count: 0, sku: 'A' }, speed: 'slow' });\n\
                  await tools.read_file();\n";
    let d = found(source);
    let want: Vec<(u32, u32, DiagnosticKind, &str)> = vec![
        (
            1,
            31,
            DiagnosticKind::WrongValue,
            "args.path: expected string, got number — path: string /* File path, relative to the root. */",
        ),
        (
            2,
            13,
            DiagnosticKind::UnknownTool,
            "unknown tool \"reed_file\"; did you mean \"read_file\"? Available tools: read_file, list_dir, glob, grep, place-order. Search by words with `await tools.$search(\"…\")`",
        ),
        (
            3,
            23,
            DiagnosticKind::MissingKey,
            "args: missing required key \"path\"",
        ),
        (
            4,
            45,
            DiagnosticKind::UnknownKey,
            "args.item: unknown key \"cuont\"; did you mean \"count\"? The object takes keys \"sku\", \"count\".",
        ),
        (
            5,
            42,
            DiagnosticKind::WrongValue,
            "args.item.count: expected a number >= 1, got 0 — count?: integer /* @minimum 1 */",
        ),
        (
            5,
            64,
            DiagnosticKind::WrongValue,
            "args.speed: expected one of \"normal\", \"express\", got \"slow\" — speed?: \"normal\" | \"express\"",
        ),
        (
            6,
            23,
            DiagnosticKind::MissingKey,
            "tools.read_file needs an arguments object with key \"path\"",
        ),
    ];
    let got: Vec<(u32, u32, DiagnosticKind, &str)> = d
        .iter()
        .map(|(l, c, k, m)| (*l, *c, *k, m.as_str()))
        .collect();
    assert_eq!(got, want);
}

/// `tools.place.order(…)` for the tool `place-order`: JavaScript reads `tools.place`, an
/// unknown tool, which the check reports there with the two ways to call the tool; a
/// method of a tool's function (`.call`, by name or alias) is not reported.
#[test]
fn a_tool_name_cut_at_a_dot_is_reported_where_the_program_reads_it() {
    let source = "await tools.place.order({item: {sku: 'A'}});\n\
                  await tools.place_order.call(null, {item: {sku: 'A'}});\n\
                  await tools['place-order'].call(null, {item: {sku: 'A'}});\n";
    assert_eq!(
        found(source),
        [(
            1,
            13,
            DiagnosticKind::UnknownTool,
            "unknown tool \"place\"; available tools: read_file, list_dir, glob, grep, place-order. A tool whose name has characters a JavaScript name cannot have is called with brackets or by its alias: tools[\"place-order\"] (or tools.place_order). Search by words with `await tools.$search(\"…\")`".to_owned()
        )]
    );
}

#[test]
fn syntax_errors_and_fenced_programs_keep_their_positions() {
    let d = found("const x = ;\n");
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].0, d[0].1, d[0].2), (1, 11, DiagnosticKind::Syntax));
    assert!(d[0].3.starts_with("SyntaxError: "), "{}", d[0].3);
    let d = found("Here is the program:\n\n```ts\nawait tools.read_file({ path: true });\n```\n");
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].0, d[0].1), (4, 31));
    let d = found("enum E { A }\n");
    assert_eq!(d[0].2, DiagnosticKind::Syntax);
}

#[test]
fn a_program_with_its_own_tools_binding_is_not_guessed_at() {
    assert_eq!(found("const tools = { x() {} };\ntools.x();"), []);
}

fn codemode(args: &[&str], path_env: Option<&str>) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_codemode"));
    cmd.args(args);
    if let Some(p) = path_env {
        cmd.env("PATH", p);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_cli_exits_0_when_clean_and_1_with_diagnostics() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.ts");
    std::fs::write(
        &good,
        "const f = await tools.read_file({path: 'x'});\nreturn f.total_lines;\n",
    )
    .unwrap();
    let bad = dir.path().join("bad.ts");
    std::fs::write(&bad, "await tools.reed_file({path: 'x'});\n").unwrap();
    let root = dir.path().to_str().unwrap();
    let (code, out, _) = codemode(&["check", good.to_str().unwrap(), "--root", root], None);
    assert_eq!((code, out.as_str()), (0, ""));
    let (code, out, _) = codemode(&["check", bad.to_str().unwrap(), "--root", root], None);
    assert_eq!(code, 1);
    assert!(
        out.starts_with(&format!(
            "{}:1:13: unknown tool \"reed_file\"; did you mean \"read_file\"?",
            bad.display()
        )),
        "{out}"
    );
}

#[test]
fn with_tsc_the_real_compiler_runs_or_the_cli_says_it_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("p.ts");
    std::fs::write(
        &program,
        // `export`s are program forms too: checked as statements of the program's body.
        "const f = await tools.read_file({path: 'x'});\nexport const n: number = f.content;\nexport default n;\n",
    )
    .unwrap();
    let root = dir.path().to_str().unwrap();
    let p = program.to_str().unwrap();
    // No tsc anywhere: the static check runs and the CLI says tsc is missing.
    let (code, out, err) = codemode(&["check", p, "--root", root, "--tsc"], Some("/nonexistent"));
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    assert!(
        err.contains("the TypeScript compiler (tsc) is not installed"),
        "{err}"
    );
    // With the pinned compiler on PATH, its diagnostic comes back at the program's position.
    let bin = node_modules().join(".bin");
    let _heavy = crate::support::heavy();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (code, out, err) = codemode(&["check", p, "--root", root, "--tsc"], Some(&path));
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(
        out,
        format!("{p}:2:14: TS2322: Type 'string' is not assignable to type 'number'.\n")
    );
    // Module forms the compiler accepts are accepted here too: an exported value of any
    // precedence, on the export's line or the next, code after it still reachable, and an
    // anonymous default that is a declaration, not the callee of the next line.
    let clean = [
        "export default 1 + 2",
        "export default\n  (x: number) => x * 2",
        "type Summary = { files: string[] };\nexport default\n  { files: [] } as Summary",
        "const c = Math.random() > 0.5\nexport default c ? 1 : 2",
        "const summary: { files?: string[] } = {};\nexport default summary;\nsummary.files = ['a'];\nconsole.log(summary.files.length);",
        "export default function () { return 1 }\n(0)",
        "export {}\nconst a: number = 1\na",
        "#!/usr/bin/env node\nexport default 1",
        // The sandbox's globals besides the timers.
        "const t: number = performance.now() + performance.timeOrigin;\nqueueMicrotask(() => {});\nexport default atob(btoa('x')) + t",
    ];
    for source in clean {
        std::fs::write(&program, source).unwrap();
        let (code, out, err) = codemode(&["check", p, "--root", root, "--tsc"], Some(&path));
        assert_eq!((code, out.as_str()), (0, ""), "{source}\n{err}");
    }
    // A position after an inserted assignment maps back to the program's own column.
    std::fs::write(&program, "export default 1; const n: number = 'x'").unwrap();
    let (code, out, err) = codemode(&["check", p, "--root", root, "--tsc"], Some(&path));
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(
        out,
        format!("{p}:1:25: TS2322: Type 'string' is not assignable to type 'number'.\n")
    );
}

#[test]
fn deep_nesting_does_not_overflow_the_stack() {
    let (registry, _handles, _dir) = registry();
    let brackets = format!("return {}{}", "[".repeat(20_000), "]".repeat(20_000));
    assert_eq!(check_program(&brackets, &registry), []);
    let awaits = format!("return {}1", "await ".repeat(20_000));
    assert_eq!(check_program(&awaits, &registry), []);
    // A deep program that calls an unknown tool still gets its diagnostic.
    let deep_call = format!(
        "return {}tools.nope({{}}){}",
        "(".repeat(5_000),
        ")".repeat(5_000)
    );
    let found = check_program(&deep_call, &registry);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].kind, DiagnosticKind::UnknownTool);
    assert_eq!((found[0].line, found[0].column), (1, 5_014));
}
