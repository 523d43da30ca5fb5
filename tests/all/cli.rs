//! The `codemode` binary, as a user runs it.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

fn codemode() -> Command {
    Command::new(env!("CARGO_BIN_EXE_codemode"))
}

fn run_stdin(args: &[&str], program: &str) -> (i32, String, String) {
    let mut child = codemode()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command that fails before it reads its input closes the pipe: that is not an error
    // of the test.
    if let Err(e) = child.stdin.take().unwrap().write_all(program.as_bytes()) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn run_prints_logs_then_result_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "a\nb\n").unwrap();
    let root = dir.path().to_str().unwrap();
    let (code, out, _) = run_stdin(
        &["run", "-", "--root", root],
        "console.log('start');\nconst f = await tools.read_file({path: 'f.txt'});\nf.total_lines",
    );
    assert_eq!(code, 0);
    assert_eq!(out, "start\nresult: 2\n");
}

#[test]
fn run_yield_after_follows_the_run_as_a_job_and_prints_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let program =
        "console.log('a'); await new Promise(r => setTimeout(r, 700)); console.warn('b'); return 3";
    let (code, out, err) = run_stdin(
        &["run", "-", "--root", root, "--yield-after", "100"],
        program,
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "a\n[warn] b\nresult: 3\n");
    assert_eq!(
        err,
        "codemode: run_code-1: a\ncodemode: run_code-1: [warn] b\n"
    );
    // Within the time: no job, nothing on stderr.
    let (code, out, err) = run_stdin(
        &["run", "-", "--root", root, "--yield-after", "5000"],
        "return 4",
    );
    assert_eq!((code, out.as_str(), err.as_str()), (0, "result: 4\n", ""));
}

#[test]
fn run_exits_1_when_the_program_fails_and_2_on_usage_errors() {
    let (code, out, _) = run_stdin(&["run", "-"], "throw new TypeError('bad')");
    assert_eq!(code, 1);
    assert_eq!(out, "error: TypeError: bad (line 1, column 11)\n");
    let (code, _, err) = run_stdin(&["run"], "");
    assert_eq!(code, 2);
    assert!(err.contains("PROGRAM"), "{err}");
    let (code, _, err) = run_stdin(&["run", "/no/such/file.ts"], "");
    assert_eq!(code, 2);
    assert!(err.starts_with("codemode: /no/such/file.ts:"), "{err}");
    let (code, _, err) = run_stdin(&["run", "-", "--memory", "lots"], "1");
    assert_eq!(code, 2);
    assert!(err.contains("not a size"), "{err}");
    // Limits the engine cannot run under are usage errors, not crashes.
    for (flag, value, says) in [
        (
            "--memory",
            "1k",
            "too small: the engine needs at least 1MiB",
        ),
        ("--memory", "0", "too small"),
        ("--timeout", "0", "\"0\" is too short: at least 1ms"),
        ("--max-in-flight", "0", "0 is not in 1.."),
        ("--root", "Cargo.toml", "--root Cargo.toml: not a folder"),
        (
            "--spill-dir",
            "Cargo.toml",
            "--spill-dir Cargo.toml: not a folder",
        ),
    ] {
        let (code, _, err) = run_stdin(&["run", "-", flag, value], "1");
        assert_eq!(code, 2, "{flag} {value}: {err}");
        assert!(err.contains(says), "{flag} {value}: {err}");
    }
}

#[test]
fn output_that_cannot_be_written_is_not_a_success() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return; // not Linux
    };
    let mut child = codemode()
        .args(["run", "-"])
        .stdin(Stdio::piped())
        .stdout(full)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"return 1").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "codemode: writing the output failed: No space left on device (os error 28)\n"
    );
}

#[test]
fn run_json_prints_the_canonical_value() {
    let (code, out, _) = run_stdin(&["run", "-", "--json"], "console.warn('w'); [1, 'two']");
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"status": "ok", "result": [1, "two"], "logs": [{"level": "warn", "text": "w"}], "calls": []})
    );
}

#[test]
fn timeout_and_memory_flags_set_the_limits() {
    let (code, out, _) = run_stdin(&["run", "-", "--timeout", "200"], "while (true) {}");
    assert_eq!(code, 1);
    assert_eq!(
        out,
        "error: TimeoutError: the program did not finish within its 200 ms timeout\n"
    );
    let (code, out, _) = run_stdin(
        &["run", "-", "--memory", "8MiB"],
        "const a = []; for (;;) a.push('x'.repeat(1000) + a.length)",
    );
    assert_eq!(code, 1);
    assert_eq!(
        out,
        "error: OutOfMemory: the program ran out of memory: it may hold at most 8388608 bytes\n"
    );
    // The engine's stack: 10 000 levels by default, fewer with a smaller --stack, and a
    // size out of range is a usage error.
    let depth = "function d(n) { return n === 0 ? 0 : 1 + d(n - 1) }\nreturn d(10000)";
    assert_eq!(run_stdin(&["run", "-"], depth).1, "result: 10000\n");
    let (code, out, _) = run_stdin(&["run", "-", "--stack", "1MiB"], depth);
    assert_eq!(
        (code, out.as_str()),
        (
            1,
            "error: RangeError: Maximum call stack size exceeded (line 1, column 48)\n"
        )
    );
    for out_of_range in ["1k", "17MiB", "1GiB"] {
        let (code, _, err) = run_stdin(&["run", "-", "--stack", out_of_range], "1");
        assert_eq!(code, 2, "{out_of_range}");
        assert!(
            err.contains("the engine's stack is from 64KiB to 16MiB"),
            "{err}"
        );
    }
    // The largest stack still ends a runaway recursion with a RangeError (QuickJS takes a
    // larger limit as none).
    let (code, out, _) = run_stdin(
        &["run", "-", "--stack", "16MiB"],
        "function g() { g() }\ng()",
    );
    assert_eq!(
        (code, out.as_str()),
        (
            1,
            "error: RangeError: Maximum call stack size exceeded (line 1, column 16)\n"
        )
    );
    // The smallest stack and a deeply nested result: a clear error from the conversion,
    // never a crash of the host.
    let nested = "let a = {};\nfor (let i = 0; i < 126; i++) a = { a };\nreturn a";
    for stack in ["64KiB", "128KiB"] {
        let (code, out, err) = run_stdin(&["run", "-", "--stack", stack], nested);
        assert_eq!(code, 1, "{stack}: {out} {err}");
        assert!(out.starts_with("error: ResultError: "), "{stack}: {out}");
    }
}

/// A built-in tool called at the bottom of a recursion re-enters the engine from the host;
/// the next recursion must still end at the same limit, on every stack size (with 8 MiB and
/// more, the second round aborted the process with the host's own stack overflow).
#[test]
fn a_tool_called_at_the_bottom_of_a_recursion_leaves_the_limit_where_it_was() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.json"), "{\"a\":1}").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let root = dir.path().to_str().unwrap();
    let program = "const out = [];
function depth(n) { try { return depth(n + 1) } catch { return n } }
for (let t = 0; t < 3; t++) {
  function g(n) { try { return g(n + 1) } catch { return tools.read_file({ path: 'a.json' }) } }
  out.push((await g(0)).content);
  function h(n) { try { return h(n + 1) } catch { return tools.list_dir({ path: '.' }).catch((e) => e.name) } }
  out.push((await h(0)).entries.length);
}
const d = depth(0);
await null;
out.push(depth(0) === d);
return out;";
    for stack in ["1MiB", "8MiB", "16MiB"] {
        let (code, out, err) = run_stdin(&["run", "-", "--root", root, "--stack", stack], program);
        assert_eq!(
            (code, out.as_str()),
            (
                0,
                "result: [\"{\\\"a\\\":1}\",2,\"{\\\"a\\\":1}\",2,\"{\\\"a\\\":1}\",2,true]\n"
            ),
            "{stack}: {err}"
        );
    }
}

#[test]
fn types_prints_declarations_of_the_file_tools() {
    let out = codemode().args(["types"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("// @generated by codemode-codegen"));
    for needle in [
        "interface ToolArgsMap {",
        "interface ToolOutputMap {",
        "declare const tools: {",
        "read_file(args: ToolArgsMap[\"read_file\"]): Promise<ToolOutputMap[\"read_file\"]>;",
        "declare class ToolCallError extends Error {",
    ] {
        assert!(text.contains(needle), "missing {needle}\n{text}");
    }
}

#[test]
fn types_prints_the_compact_layout_the_globals_or_rust_types() {
    let run = |args: &[&str]| {
        let out = codemode().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let compact = run(&["types", "--compact"]);
    assert!(
        compact.contains("declare const tools: { [K in keyof ToolArgsMap]: (...args: {} extends ToolArgsMap[K] ? [ToolArgsMap[K]?] : [ToolArgsMap[K]]) => Promise<ToolOutputMap[K]> };")
            && compact.contains(" Extra object keys are ignored.\n"),
        "{compact}"
    );
    // Seven lines of their own (two are ToolArgsMap's braces), and each of the 8 built-in
    // tools on a line below its one-line description.
    assert_eq!(compact.lines().count(), 7 + 2 * 8, "{compact}");
    let globals = run(&["types", "--globals"]);
    assert!(globals.contains("declare const console: {"), "{globals}");
    let rust = run(&["types", "--rust"]);
    assert!(
        rust.starts_with("// @generated by codemode-codegen (typify)"),
        "{rust}"
    );
    assert!(rust.contains("pub mod read_file {"), "{rust}");
    assert!(rust.contains("pub struct Args {"), "{rust}");
    let out = codemode()
        .args(["types", "--rust", "--compact"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_readme_example_runs_on_this_repository() {
    let root = env!("CARGO_MANIFEST_DIR");
    let v = crate::support::codemode_in_repo(&[
        "run",
        "examples/largest_rust_files.ts",
        "--root",
        ".",
        "--json",
    ]);
    let files = v["result"].as_array().unwrap();
    assert_eq!(files.len(), 5);
    // the same numbers the file system gives
    for f in files {
        let path = f["path"].as_str().unwrap();
        let text = std::fs::read_to_string(std::path::Path::new(root).join(path)).unwrap();
        assert_eq!(f["lines"], text.lines().count(), "{path}");
        let (fns, pub_fns) = count_fns(&text);
        assert_eq!(f["fns"], fns, "{path}");
        assert_eq!(f["pub_fns"], pub_fns, "{path}");
    }
    // The example shows something: the largest files define functions, some public.
    assert!(files.iter().all(|f| f["fns"].as_u64().unwrap() > 0));
    assert!(files.iter().any(|f| f["pub_fns"].as_u64().unwrap() > 0));
    let lines: Vec<u64> = files.iter().map(|f| f["lines"].as_u64().unwrap()).collect();
    assert!(lines.windows(2).all(|w| w[0] >= w[1]));
}

/// The functions a Rust source defines (a line starting with `fn`, after an optional `pub`
/// or `pub(…)` and `async`/`const`/`unsafe`), and how many of them are public.
fn count_fns(text: &str) -> (usize, usize) {
    let (mut fns, mut public) = (0, 0);
    for line in text.lines() {
        let mut rest = line.trim_start();
        let is_pub = rest.starts_with("pub ") || rest.starts_with("pub(");
        if is_pub {
            rest = rest[3..].trim_start();
            if rest.starts_with('(') {
                let Some(end) = rest.find(')') else { continue };
                rest = rest[end + 1..].trim_start();
            }
        }
        while let Some(r) = ["async ", "const ", "unsafe "]
            .iter()
            .find_map(|k| rest.strip_prefix(k))
        {
            rest = r.trim_start();
        }
        if rest.starts_with("fn ") {
            fns += 1;
            public += usize::from(is_pub);
        }
    }
    (fns, public)
}

#[test]
fn every_subcommand_s_help_ends_with_an_example() {
    for sub in ["run", "check", "types", "tools", "mcp"] {
        let out = codemode().args([sub, "--help"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{sub}");
        let help = String::from_utf8_lossy(&out.stdout);
        let tail: Vec<&str> = help
            .trim_end()
            .lines()
            .rev()
            .take_while(|l| l.starts_with("  codemode "))
            .collect();
        assert!(
            !tail.is_empty(),
            "{sub} --help ends without an example:\n{help}"
        );
        assert!(help.contains("\nExample:\n  codemode "), "{sub}");
    }
}

#[test]
fn limits_take_units() {
    let (code, out, err) = run_stdin(&["run", "-", "--timeout", "300ms"], "while (true) {}");
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        out,
        "error: TimeoutError: the program did not finish within its 300 ms timeout\n"
    );
    let (code, out, _) = run_stdin(
        &["run", "-", "--timeout", "1.5s", "--memory", "32MiB"],
        "return 1",
    );
    assert_eq!((code, out.as_str()), (0, "result: 1\n"));
    let (code, _, err) = run_stdin(&["run", "-", "--timeout", "3 weeks"], "return 1");
    assert_eq!(code, 2);
    assert!(
        err.contains("invalid value '3 weeks' for '--timeout <TIME>': unknown duration unit \"weeks\": use ms, s, m or h"),
        "{err}"
    );
}

#[test]
fn quiet_prints_only_the_result_and_verbose_traces_each_call() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
    let root = dir.path().to_str().unwrap();
    let program = "console.log('noise'); const f = await tools.read_file({path: 'a.txt'}); return f.total_lines";
    let (code, out, err) = run_stdin(&["run", "-", "--root", root, "--quiet"], program);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "result: 1\n", ""));
    let (code, out, err) = run_stdin(&["run", "-", "--root", root, "--verbose"], program);
    assert_eq!((code, out.as_str()), (0, "noise\nresult: 1\n"));
    // One span per call, closed with its fields: the read, then run_code around it.
    let closes: Vec<&str> = err.lines().filter(|l| l.contains(" close ")).collect();
    assert_eq!(closes.len(), 2, "{err}");
    assert!(
        closes[0].contains("call{tool=\"read_file\" call_id=2"),
        "{err}"
    );
    assert!(closes[0].contains("outcome=\"ok\""), "{err}");
    assert!(
        closes[1].contains("call{tool=\"run_code\" call_id=1"),
        "{err}"
    );
    let (code, _, err) = run_stdin(&["run", "-", "--quiet", "--verbose"], "1");
    assert_eq!(code, 2);
    assert!(err.contains("cannot be used with"), "{err}");
}

#[test]
fn a_status_line_shows_on_a_terminal_only_and_is_erased_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("p.js");
    std::fs::write(
        &program,
        "await new Promise(r => setTimeout(r, 900)); return 'slow'",
    )
    .unwrap();
    let bin = env!("CARGO_BIN_EXE_codemode");
    let command = format!("{bin} run {}", program.display());
    // `script` runs the command on a pseudo-terminal and copies what it shows.
    let out = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("\r\x1b[2Kcodemode: "), "{shown:?}");
    assert!(shown.contains(" calls done · 0 in flight"), "{shown:?}");
    assert!(
        shown.ends_with("\r\x1b[2Kresult: \"slow\"\r\n"),
        "{shown:?}"
    );
    // Without a terminal: not a byte of it.
    let (code, out, err) = run_stdin(
        &["run", "-"],
        "await new Promise(r => setTimeout(r, 900)); return 'slow'",
    );
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (0, "result: \"slow\"\n", "")
    );
}

/// On a terminal, a line printed while the status line is drawn (a console line of a run
/// followed with `--yield-after`) starts on a line of its own: the status line is erased
/// first, never left in front of it, and fits one row. `script` (util-linux) gives the
/// command a terminal.
#[test]
fn on_a_terminal_lines_printed_under_the_status_line_start_lines_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("p.js");
    std::fs::write(
        &program,
        "for (let i = 0; i < 3; i++) { console.log('line ' + i); await new Promise(r => setTimeout(r, 700)); }\nreturn 1",
    )
    .unwrap();
    // A narrow terminal: the status line (44 characters at the least) is cut to one row.
    let command = format!(
        "stty rows 24 cols 40; {} run --yield-after 100 --root {} {}",
        env!("CARGO_BIN_EXE_codemode"),
        dir.path().display(),
        program.display()
    );
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let shown = String::from_utf8_lossy(&out.stdout);
    // The status line was drawn (the run takes about 2 s), so the checks below mean
    // something, and each time within the 40 columns.
    let drawn: Vec<&str> = shown
        .split("\r\x1b[2K")
        .skip(1)
        .map(|s| s.split(['\r', '\n']).next().unwrap_or(""))
        .filter(|s| s.contains(" calls done"))
        .collect();
    assert!(!drawn.is_empty(), "{shown:?}");
    for line in &drawn {
        assert!(line.chars().count() <= 39, "{line:?}");
    }
    for i in 0..3 {
        let line = format!("codemode: run_code-1: line {i}");
        let at = shown
            .find(&line)
            .unwrap_or_else(|| panic!("{line}: {shown:?}"));
        let before = &shown[..at];
        assert!(
            before.is_empty() || before.ends_with('\n') || before.ends_with("\r\x1b[2K"),
            "{line} follows {:?}",
            &before[before.len().saturating_sub(60)..]
        );
    }
}
