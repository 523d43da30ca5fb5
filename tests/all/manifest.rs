//! Command-backed tools from a manifest, through the built binary, with the small
//! Python and shell tools of `tests/tools/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use codemode::manifest::Manifest;
use serde_json::{Value, json};

fn tools_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tools")
}

/// Runs `program` with the test manifest; returns the exit code and the canonical value.
fn run(program: &str, extra_env: &[(&str, &str)]) -> (i32, Value) {
    run_with(program, extra_env, &[])
}

/// [`run`] with more options for `codemode run`.
fn run_with(program: &str, extra_env: &[(&str, &str)], options: &[&str]) -> (i32, Value) {
    // Starting Python processes loads both cores; kept apart from the deadline checks.
    let _heavy = crate::support::heavy();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.ts");
    std::fs::write(&file, program).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_codemode"));
    cmd.args(["run", file.to_str().unwrap(), "--json", "--root"])
        .arg(dir.path())
        .arg("--tools")
        .arg(tools_dir().join("manifest.json"))
        .args(options);
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let value = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), value)
}

/// The message a call ends with, or its value.
const CATCH: &str = "async function attempt(f) { try { return await f(); } catch (e) { return `${e.name}: ${e.message}`; } }\n";

#[test]
fn tools_succeed_and_fail_with_clear_messages() {
    let program = format!(
        "{CATCH}return {{
            echo: await tools.echo({{ text: 'héllo \"wörld\"' }}),
            fail: await attempt(() => tools.fail({{}})),
            signal: await attempt(() => tools.signal({{}})),
            not_json: await attempt(() => tools.not_json({{}})),
            lone_surrogate: await attempt(() => tools.not_json({{ surrogate: true }})),
            bad_output: await attempt(() => tools.bad_output({{}})),
            search_ok: await tools.search({{ q: 'x' }}),
            search_bad: await attempt(() => tools.search({{ q: '', limit: 11 }})),
        }}"
    );
    let (code, v) = run(&program, &[]);
    assert_eq!(code, 0, "{v:#}");
    let r = &v["result"];
    assert_eq!(r["echo"], json!({"text": "héllo \"wörld\""}));
    assert_eq!(
        r["fail"],
        "ToolCallError: fail: exited with status 3; stderr: the widget is broken"
    );
    assert_eq!(
        r["signal"],
        "ToolCallError: signal: killed by signal 11 (SIGSEGV)"
    );
    assert_eq!(
        r["not_json"],
        "ToolCallError: not_json: the output is not one JSON value (expected value at line 1 column 1); stdout began: \"hello, world\\n\""
    );
    assert_eq!(
        r["lone_surrogate"],
        "ToolCallError: not_json: the output is not one JSON value (unexpected end of hex escape at line 1 column 18: a `\\uD800`–`\\uDFFF` escape must be one half of a surrogate pair, since a string must be Unicode text); stdout began: \"{\\\"text\\\": \\\"a\\\\ud800b\\\"}\\n\""
    );
    assert_eq!(
        r["bad_output"],
        "ToolCallError: tool bad_output returned output that does not match its schema:\noutput.text: expected string, got number"
    );
    // `input_schema` (JSON Schema) is imported: validation and passing through.
    assert_eq!(r["search_ok"], json!({"q": "x"}));
    assert_eq!(
        r["search_bad"],
        "ToolCallError: invalid arguments for search:\nargs.q: expected at least 1 characters, got 0 — q: string /* @minLength 1 */\nargs.limit: expected a number <= 10, got 11 — limit?: integer /* @maximum 10 */"
    );
}

#[test]
fn big_integers_stdin_floods_and_the_environment() {
    let program = "return {
        big: await tools.big_int({ n: 123456789012345678901234567890n }),
        exact: (await tools.big_int({ n: 123456789012345678901234567890n })).next === 123456789012345678901234567891n,
        noisy: await tools.noisy({ pad: 'x'.repeat(500000) }),
        env: await tools.env({}),
    }";
    let (code, v) = run(program, &[("CODEMODE_TEST_SECRET", "s3cret")]);
    assert_eq!(code, 0, "{v:#}");
    let r = &v["result"];
    // Exact through JSON both ways (Python integers are exact too).
    assert_eq!(
        r["big"].to_string(),
        r#"{"n":123456789012345678901234567890,"next":123456789012345678901234567891}"#
    );
    assert_eq!(r["exact"], true);
    // A tool that never reads 500 kB of input and writes 1 MiB to stderr does not deadlock.
    assert_eq!(r["noisy"], json!({"ok": true}));
    // The manifest's folder is the working folder; the environment is cleared but for
    // the allow-list (PATH kept) and the tool's own `env`.
    let dir = tools_dir().canonicalize().unwrap();
    assert_eq!(
        r["env"],
        json!({"cwd": dir.to_str().unwrap(), "mode": "fast", "secret": "", "has_path": true})
    );
}

/// Whether process `pid` still runs (a zombie has ended).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => stat
            .rsplit_once(") ")
            .map(|(_, rest)| !rest.starts_with('Z'))
            .unwrap_or(false),
    }
}

fn pid_in(path: &Path) -> u32 {
    for _ in 0..50 {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("{} was never written", path.display());
}

#[test]
fn timeouts_cancellation_and_grandchildren_leave_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    let [slow, sleep, grand] =
        ["slow", "sleep", "grand"].map(|n| dir.path().join(format!("{n}.pid")));
    let program = format!(
        "{CATCH}const slow = await attempt(() => tools.slow({{ pidfile: {slow:?} }}));
        const grand = await tools.grandchild({{ pidfile: {grand:?} }});
        // Started and never awaited: cancelled when the program ends.
        tools.sleep({{ pidfile: {sleep:?} }}).catch(() => {{}});
        await new Promise((r) => setTimeout(r, 300));
        return {{ slow, grand }};"
    );
    let (code, v) = run(&program, &[]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(
        v["result"]["slow"],
        "ToolCallError: slow: did not finish within its 300 ms timeout and was killed"
    );
    assert_eq!(v["result"]["grand"], json!({"started": true}));
    let calls: Vec<(&str, &str)> = v["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["tool"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        calls,
        [
            ("slow", "error"),
            ("grandchild", "ok"),
            ("sleep", "cancelled")
        ]
    );
    for file in [&slow, &sleep, &grand] {
        let pid = pid_in(file);
        assert!(
            !alive(pid),
            "{} (pid {pid}) survived the run",
            file.display()
        );
    }
}

#[test]
fn a_flood_is_stopped_at_the_limit_and_an_escaped_child_does_not_hold_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("escaped.pid");
    let program = format!(
        "{CATCH}return {{
            flood: await attempt(() => tools.flood({{}})),
            escape: await tools.escape({{ pidfile: {pidfile:?} }}),
        }}"
    );
    let (code, v) = run(&program, &[]);
    // The escaped child left the process group: only the test can end it.
    let pid = pid_in(&pidfile);
    let _ = Command::new("kill").arg(pid.to_string()).status();
    assert_eq!(code, 0, "{v:#}");
    // Killed at 64 MiB, long before its 20 s timeout.
    assert_eq!(
        v["result"]["flood"],
        "ToolCallError: flood: printed more than 67108864 bytes on stdout and was killed"
    );
    // The answer printed before the command exited, though the child still holds stdout.
    assert_eq!(v["result"]["escape"], json!({"answered": true}));
    let statuses: Vec<&str> = v["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["error", "ok"]);
}

#[test]
fn promise_all_runs_the_commands_at_the_same_time() {
    // Each call waits until the others it should run with have started (`meet`), so the
    // calls overlap however slowly a loaded machine starts Python; calls that ran one
    // after another would not.
    let meet = tempfile::tempdir().unwrap();
    let program = format!(
        "const runs = await Promise.all([1, 2, 3, 4].map(() => tools.timing({{ ms: 300, meet: {:?}, of: 4 }})));
        return Math.max(...runs.map((r) => r.start)) < Math.min(...runs.map((r) => r.end));",
        meet.path()
    );
    let (code, v) = run(&program, &[]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["result"], true, "the four calls overlapped in time");

    // Bounded by `--max-in-flight`: never more than two processes at once.
    let meet = tempfile::tempdir().unwrap();
    let program = format!(
        "const runs = await Promise.all([1, 2, 3, 4].map(() => tools.timing({{ ms: 300, meet: {:?}, of: 2 }})));
        return runs.map((r) => runs.filter((o) => o.start <= r.start && r.start < o.end).length);",
        meet.path()
    );
    let (code, v) = run_with(&program, &[], &["--max-in-flight", "2"]);
    assert_eq!(code, 0, "{v:#}");
    let overlaps: Vec<u64> = v["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(overlaps.iter().max(), Some(&2), "{overlaps:?}");

    // And `--max-tool-calls` bounds the total.
    let program = "await tools.echo({ text: 'a' });
        try { await tools.echo({ text: 'b' }); } catch (e) { return e.message; }";
    let (code, v) = run_with(program, &[], &["--max-tool-calls", "1"]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(
        v["result"],
        "this run reached its limit of 1 tool calls; no more calls can start"
    );
}

/// Writes `manifest` to a fresh folder and runs `codemode tools --tools` on it.
fn load(manifest: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("manifest.json");
    std::fs::write(&path, manifest).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["tools", "--tools"])
        .arg(&path)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).replace(path.to_str().unwrap(), "MANIFEST");
    (out.status.code().unwrap_or(-1), err)
}

#[test]
fn a_malformed_manifest_fails_at_start_with_the_path_of_the_problem() {
    let cases = [
        (
            r#"{"tools": [{"name": "a", "command": ["true"]}, {"name": "b", "command": ["true"], "parameters": {"x": {"type": "strng"}}}]}"#,
            "codemode: MANIFEST: tools[1].parameters.x.type: ",
        ),
        (
            r#"{"tools": [{"name": "a", "command": ["true"]}, {"name": "a", "command": ["true"]}]}"#,
            "codemode: MANIFEST: tools[1].name: \"a\" is also the name of tools[0]\n",
        ),
        (
            r#"{"tools": [{"name": "a-b", "command": ["true"]}, {"name": "a_b", "command": ["true"]}]}"#,
            "codemode: MANIFEST: tools[1].name: ",
        ),
        (
            r#"{"tools": [{"name": "read_file", "command": ["true"]}]}"#,
            "codemode: MANIFEST: tools[0].name: ",
        ),
        (
            r#"{"tools": [{"name": "run_code", "command": ["true"]}]}"#,
            "codemode: MANIFEST: tools[0].name: \"run_code\" is the name of the tool that runs programs; choose another\n",
        ),
        (
            r#"{"tools": [{"name": "a", "comand": ["true"]}]}"#,
            "codemode: MANIFEST: tools[0].comand: unknown key; a tool takes name, description, parameters, input_schema, output, output_schema, command, timeout_ms, env, run_in_background, annotations\n",
        ),
        (
            r#"{"tools": [{"name": "a"}]}"#,
            "codemode: MANIFEST: tools[0].command: missing\n",
        ),
        (
            r#"{"tools": [{"name": "a", "command": ["true"], "timeout_ms": 0}]}"#,
            "codemode: MANIFEST: tools[0].timeout_ms: expected a positive integer (milliseconds)\n",
        ),
        (
            r#"{"tools": [{"name": "a", "command": ["true"], "input_schema": {"type": "object", "properties": {"n": {"type": "integr"}}}}]}"#,
            "codemode: MANIFEST: tools[0].input_schema.properties.n.type: ",
        ),
        (
            r#"{"tools": [{"name": "a", "command": ["true"], "output": {"type": "string"}, "output_schema": {"type": "string"}}]}"#,
            "codemode: MANIFEST: tools[0].output_schema: give either output (our nodes) or output_schema (JSON Schema), not both\n",
        ),
        (
            r#"{"tools": [{"name": "a", "command": ["true"], "annotations": {"readOnly": true}}]}"#,
            "codemode: MANIFEST: tools[0].annotations.readOnly: expected one of readOnlyHint, destructiveHint, idempotentHint, openWorldHint with true or false\n",
        ),
        (
            r#"{"tools": [{"name": "a", "command": ["true"], "run_in_background": "yes"}]}"#,
            "codemode: MANIFEST: tools[0].run_in_background: expected true or false\n",
        ),
        ("{\"tools\": [", "codemode: MANIFEST: not JSON: "),
    ];
    for (manifest, want) in cases {
        let (code, err) = load(manifest);
        assert_eq!(code, 2, "{manifest}: {err}");
        assert!(
            err.starts_with(want),
            "{manifest}:
  got {err:?}
 want {want:?}"
        );
    }
}

#[test]
fn manifest_tools_are_ordinary_tools_for_types_and_check() {
    let manifest = tools_dir().join("manifest.json");
    let out = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["types", "--tools"])
        .arg(&manifest)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("/** Echo the text back. */\n  echo(args: ToolArgsMap[\"echo\"]): Promise<ToolOutputMap[\"echo\"]>;"), "{text}");
    assert!(
        text.contains("  \"echo\": {\n    text: string;\n  };"),
        "{text}"
    );
    let loaded = Manifest::load(&manifest).unwrap();
    assert_eq!(loaded.tools.len(), 15);
    assert_eq!(loaded.tools[0].timeout.as_millis(), 30_000);
}

#[test]
fn the_readme_manifest_example_runs_and_type_checks() {
    let _heavy = crate::support::heavy();
    let v = crate::support::codemode_in_repo(&[
        "run",
        "examples/word_stats.ts",
        "--root",
        ".",
        "--tools",
        "examples/tools/manifest.json",
        "--json",
    ]);
    let readme = v["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == "README.md")
        .expect("README.md counted");
    assert!(readme["words"].as_u64().unwrap() > 500, "{readme}");
    assert_eq!(v["calls"].as_array().unwrap()[0]["tool"], "glob");
    let check = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args([
            "check",
            "examples/word_stats.ts",
            "--root",
            ".",
            "--tools",
            "examples/tools/manifest.json",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
}

#[test]
fn import_warnings_reach_stderr_tools_json_and_the_library() {
    let manifest = r#"{"tools": [{"name": "w", "command": ["true"],
        "input_schema": {"type": "object", "properties": {"a": {"type": "string", "x-widget": "area"}}},
        "output_schema": {"type": "string", "x-unit": "m"}}]}"#;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("manifest.json");
    std::fs::write(&path, manifest).unwrap();
    // the library: a list the host can log
    let loaded = Manifest::load(&path).unwrap();
    let shown: Vec<String> = loaded
        .warnings()
        .iter()
        .map(|(tool, w)| format!("{tool}: {w}"))
        .collect();
    assert_eq!(
        shown,
        [
            "w: tools[0].input_schema.properties.a.x-widget: `x-widget` is kept for display but not enforced",
            "w: tools[0].output_schema.x-unit: `x-unit` is kept for display but not enforced",
        ]
    );
    // stderr, and `warnings` in `tools --json`
    let out = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["tools", "--json", "--tools"])
        .arg(&path)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr).replace(path.to_str().unwrap(), "MANIFEST");
    assert_eq!(
        err,
        "codemode: MANIFEST: tool \"w\": tools[0].input_schema.properties.a.x-widget: `x-widget` is kept for display but not enforced\n\
         codemode: MANIFEST: tool \"w\": tools[0].output_schema.x-unit: `x-unit` is kept for display but not enforced\n"
    );
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let w = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "w")
        .unwrap();
    assert_eq!(
        w["warnings"],
        json!([
            "tools[0].input_schema.properties.a.x-widget: `x-widget` is kept for display but not enforced",
            "tools[0].output_schema.x-unit: `x-unit` is kept for display but not enforced"
        ])
    );
    let read_file = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "read_file")
        .unwrap();
    assert!(read_file.get("warnings").is_none());
}
