//! The tools that act (write_file, edit_file, bash, web_fetch) and the permissions that
//! gate them, through the built binary.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

/// Runs `codemode run - --json ARGS` over `root` with `program`; returns the exit code, the
/// canonical value and stderr.
pub(crate) fn run(root: &Path, args: &[&str], program: &str) -> (i32, Value, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["run", "-", "--json", "--root", root.to_str().unwrap()])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(program.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    (
        out.status.code().unwrap_or(-1),
        value,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn message(value: &Value) -> &str {
    value["error"]["message"].as_str().unwrap_or_default()
}

#[test]
fn writing_is_denied_unless_allowed_and_says_which_flag_allows_it() {
    let dir = tempfile::tempdir().unwrap();
    for (program, flag) in [
        (
            "await tools.write_file({path: 'a.txt', content: 'x'})",
            "--allow write",
        ),
        (
            "await tools.edit_file({path: 'a.txt', old_text: 'x', new_text: 'y'})",
            "--allow write",
        ),
        ("await tools.bash({command: 'true'})", "--allow shell"),
        (
            "await tools.web_fetch({url: 'http://127.0.0.1:1/'})",
            "--allow net=HOST",
        ),
    ] {
        let (code, v, _) = run(dir.path(), &[], program);
        assert_eq!(code, 1, "{program}");
        let tool = program.split(['.', '(']).nth(1).unwrap();
        assert_eq!(v["error"]["name"], "ToolCallError");
        assert_eq!(
            message(&v),
            format!("{tool}: not allowed in this run; run codemode with {flag} to allow it")
        );
    }
    assert!(!dir.path().join("a.txt").exists());
}

#[test]
fn write_file_creates_replaces_atomically_and_stays_in_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
    std::fs::write(root.join("target.txt"), "old").unwrap();
    std::os::unix::fs::symlink("target.txt", root.join("link.txt")).unwrap();
    std::fs::write(outside.path().join("secret.txt"), "s").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("secret_link"))
        .unwrap();
    let program = r#"
        const made = await tools.write_file({path: "new/deep/a.txt", content: "one\n"});
        const again = await tools.write_file({path: "new/deep/a.txt", content: "two\n"});
        const through = await tools.write_file({path: "link.txt", content: "via link"});
        const refused = [];
        for (const path of ["../x.txt", "/etc/codemode-x", "out/x.txt", "secret_link", "new"]) {
            try { await tools.write_file({path, content: "no"}); refused.push("written"); }
            catch (e) { refused.push(e.message); }
        }
        return {made, again, through, refused};
    "#;
    let (code, v, err) = run(root, &["--allow", "write"], program);
    assert_eq!(code, 0, "{v} {err}");
    let r = &v["result"];
    assert_eq!(
        r["made"],
        serde_json::json!({"path": "new/deep/a.txt", "bytes": 4, "existed": false})
    );
    assert_eq!(r["again"]["existed"], true);
    assert_eq!(r["through"]["path"], "target.txt");
    assert_eq!(
        std::fs::read_to_string(root.join("new/deep/a.txt")).unwrap(),
        "two\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("target.txt")).unwrap(),
        "via link"
    );
    assert!(
        std::fs::symlink_metadata(root.join("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let outside_msg = |p: &str| {
        format!("{p}: the path is outside the root folder; use a path relative to the root")
    };
    assert_eq!(
        r["refused"],
        serde_json::json!([
            outside_msg("../x.txt"),
            outside_msg("/etc/codemode-x"),
            outside_msg("out/x.txt"),
            outside_msg("secret_link"),
            "new: is a folder; give the path of a file",
        ])
    );
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "s"
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
    // No temporary file is left beside what was written.
    let left: Vec<_> = std::fs::read_dir(root.join("new/deep"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["a.txt"]);
}

#[test]
fn edit_file_replaces_exact_text_once_or_everywhere_and_reports_hunks() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(
        root.join("m.rs"),
        "fn old() {}\nfn main() { old(); old(); }\n",
    )
    .unwrap();
    let program = r#"
        const errors = [];
        for (const args of [
            {path: "m.rs", old_text: "missing", new_text: "x"},
            {path: "m.rs", old_text: "old", new_text: "new"},
            {path: "nope.rs", old_text: "a", new_text: "b"},
        ]) {
            try { await tools.edit_file(args); } catch (e) { errors.push(e.message); }
        }
        const one = await tools.edit_file({path: "m.rs", old_text: "fn old()", new_text: "fn renamed()"});
        const all = await tools.edit_file({path: "m.rs", old_text: "old()", new_text: "renamed()", replace_all: true});
        return {errors, one, all};
    "#;
    let (code, v, err) = run(root, &["--allow", "write"], program);
    assert_eq!(code, 0, "{v} {err}");
    let r = &v["result"];
    assert_eq!(
        r["errors"],
        serde_json::json!([
            "m.rs: old_text was not found; it must match the file exactly, whitespace and line breaks included (read_file shows the text)",
            "m.rs: old_text occurs 3 times; include more of the surrounding text to pick one, or set replace_all to replace them all",
            "nope.rs: no such file or directory",
        ])
    );
    assert_eq!(r["one"]["replacements"], 1);
    assert_eq!(
        r["one"]["hunks"],
        serde_json::json!([{"old_start": 1, "old_lines": ["fn old() {}"], "new_start": 1, "new_lines": ["fn renamed() {}"]}])
    );
    assert_eq!(r["all"]["replacements"], 2);
    assert_eq!(
        r["all"]["hunks"],
        serde_json::json!([{"old_start": 2, "old_lines": ["fn main() { old(); old(); }"], "new_start": 2, "new_lines": ["fn main() { renamed(); renamed(); }"]}])
    );
    assert_eq!(
        std::fs::read_to_string(root.join("m.rs")).unwrap(),
        "fn renamed() {}\nfn main() { renamed(); renamed(); }\n"
    );
}

#[test]
fn bash_returns_exit_codes_bounds_output_times_out_and_is_killed_with_its_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("sub")).unwrap();
    let program = r#"
        const fail = await tools.bash({command: "echo out; echo err >&2; exit 3"});
        const here = await tools.bash({command: "pwd", cwd: "sub"});
        const big = await tools.bash({command: "head -c 100000 /dev/zero | tr '\\0' a"});
        let slow;
        try { await tools.bash({command: "sleep 5", timeout_ms: 200}); } catch (e) { slow = e.message; }
        let outside;
        try { await tools.bash({command: "true", cwd: ".."}); } catch (e) { outside = e.message; }
        return {fail, here: here.stdout, big: big.stdout.length, dropped: big.stdout.includes("… 67232 bytes dropped …"), slow, outside};
    "#;
    let (code, v, err) = run(root, &["--allow", "shell"], program);
    assert_eq!(code, 0, "{v} {err}");
    let r = &v["result"];
    assert_eq!(
        r["fail"],
        serde_json::json!({"stdout": "out\n", "stderr": "err\n", "exit_code": 3})
    );
    let real = root.canonicalize().unwrap();
    assert_eq!(r["here"], format!("{}/sub\n", real.display()));
    assert_eq!(r["dropped"], true, "{r}");
    assert_eq!(
        r["slow"],
        "the command did not finish within 200 ms and was killed; output so far:\n"
    );
    assert_eq!(
        r["outside"],
        "..: the path is outside the root folder; use a path relative to the root"
    );

    // The run's timeout cancels the call: the command's whole group is killed.
    let marker = format!("codemode-bash-{}", std::process::id());
    let program = format!("await tools.bash({{command: 'sleep 60 & sleep 60; echo {marker}'}})");
    let (code, v, _) = run(root, &["--allow", "shell", "--timeout", "1000"], &program);
    assert_eq!(code, 1);
    assert_eq!(v["error"]["name"], "TimeoutError");
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(crate::support::processes_with(&marker), 0);
}

/// A loopback HTTP server for the tests: `/page` (HTML), `/text`, `/big` (2 MB),
/// `/to-page` (a redirect to `/page`), `/away` (a redirect to `other`'s port), anything
/// else 404. Serves until the test process ends.
pub(crate) fn http_server(other: u16) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut line = String::new();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                    break;
                }
            }
            let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
            let (status, headers, body): (&str, String, Vec<u8>) = match path.as_str() {
                "/page" => ("200 OK", "Content-Type: text/html; charset=utf-8\r\n".into(),
                    b"<html><head><title>The  Page</title></head><body><h1>Hello</h1><p>World &amp; <b>all</b></p><script>ignored()</script></body></html>".to_vec()),
                "/text" => ("200 OK", "Content-Type: text/plain\r\n".into(), b"plain text".to_vec()),
                "/big" => ("200 OK", "Content-Type: text/plain\r\n".into(), vec![b'x'; 2 << 20]),
                "/to-page" => ("302 Found", "Location: /page\r\n".into(), Vec::new()),
                "/away" => ("302 Found", format!("Location: http://127.0.0.1:{other}/page\r\n"), Vec::new()),
                _ => ("404 Not Found", "Content-Type: text/plain\r\n".into(), b"no".to_vec()),
            };
            let head = format!(
                "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    port
}

#[test]
fn web_fetch_reads_allowed_hosts_rechecks_redirects_and_bounds_the_body() {
    let other = http_server(1);
    let port = http_server(other);
    let dir = tempfile::tempdir().unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let program = format!(
        r#"
        const page = await tools.web_fetch({{url: "{base}/to-page"}});
        const missing = await tools.web_fetch({{url: "{base}/nothing"}});
        const big = await tools.web_fetch({{url: "{base}/big", max_bytes: 1000}});
        const refused = [];
        for (const url of ["{base}/away", "http://127.0.0.1:{other}/page", "file:///etc/passwd"]) {{
            try {{ await tools.web_fetch({{url}}); refused.push("fetched"); }} catch (e) {{ refused.push(e.message); }}
        }}
        return {{page, missing: missing.status, big: [big.bytes, big.truncated, big.text.length], refused}};
        "#
    );
    let allow = format!("net=127.0.0.1:{port}");
    let (code, v, err) = run(dir.path(), &["--allow", &allow], &program);
    assert_eq!(code, 0, "{v} {err}");
    let r = &v["result"];
    assert_eq!(r["page"]["url"], format!("{base}/page"));
    assert_eq!(r["page"]["status"], 200);
    assert_eq!(r["page"]["title"], "The Page");
    let text = r["page"]["text"].as_str().unwrap();
    assert!(
        text.contains("Hello") && text.contains("World & **all**"),
        "{text}"
    );
    assert!(!text.contains("ignored()"), "{text}");
    assert_eq!(r["missing"], 404);
    assert_eq!(r["big"], serde_json::json!([1000, true, 1000]));
    assert_eq!(
        r["refused"],
        serde_json::json!([
            format!(
                "http://127.0.0.1:{other}/page: host 127.0.0.1:{other} is not among the hosts this tool may reach (127.0.0.1:{port}); a redirect is checked like the first address"
            ),
            format!(
                "http://127.0.0.1:{other}/page: host 127.0.0.1:{other} is not allowed; run codemode with --allow net=127.0.0.1:{other} to allow it"
            ),
            "file:///etc/passwd: only http and https addresses are fetched, not file",
        ])
    );
}

#[test]
fn the_rename_example_edits_a_project_and_runs_its_tests() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for name in ["geometry.py", "report.py", "test_geometry.py"] {
        std::fs::copy(
            repo.join("examples/rename_project").join(name),
            dir.path().join(name),
        )
        .unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["run", "examples/rename_function.ts", "--root"])
        .arg(dir.path())
        .args(["--allow", "write", "--allow", "shell"])
        .current_dir(repo)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout,
        "geometry.py: 1 replaced\nreport.py: 2 replaced\ntest_geometry.py: 2 replaced\n\
         result: {\"renamed\":\"circle_area -> area_of_circle\",\"files\":[\"geometry.py\",\"report.py\",\"test_geometry.py\"],\"passed\":[\"circle\",\"square\",\"total\"],\"exit_code\":0}\n"
    );
    let report = std::fs::read_to_string(dir.path().join("report.py")).unwrap();
    assert!(report.contains("from geometry import area_of_circle, square_area"));
    assert!(!report.contains("circle_area"));
    // Run again without --allow shell: nothing is left to rename, and the tests are refused.
    let again = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["run", "examples/rename_function.ts", "--root"])
        .arg(dir.path())
        .args(["--allow", "write"])
        .current_dir(repo)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&again.stdout)
            .contains("bash: not allowed in this run; run codemode with --allow shell to allow it"),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );
}

#[test]
fn cards_of_every_kind_are_written_as_json_lines_and_replay_identically() {
    let port = http_server(1);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("a.txt"), "alpha\nbeta\n").unwrap();
    let cards = root.join("cards.jsonl");
    let program = format!(
        r#"
        await tools.read_file({{path: "a.txt"}});
        await tools.grep({{pattern: "beta"}});
        await tools.glob({{pattern: "*.txt"}});
        await tools.write_file({{path: "b.txt", content: "new\n"}});
        await tools.edit_file({{path: "a.txt", old_text: "beta", new_text: "gamma"}});
        await tools.bash({{command: "echo hi"}});
        await tools.web_fetch({{url: "http://127.0.0.1:{port}/page"}});
        try {{ await tools.read_file({{path: "missing"}}); }} catch {{}}
        return "done";
        "#
    );
    let allow = format!("net=127.0.0.1:{port}");
    let (code, v, err) = run(
        root,
        &[
            "--allow",
            "write",
            "--allow",
            "shell",
            "--allow",
            &allow,
            "--cards",
            cards.to_str().unwrap(),
        ],
        &program,
    );
    assert_eq!(code, 0, "{v} {err}");
    let lines: Vec<Value> = std::fs::read_to_string(&cards)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // run_code and its 8 calls, each pending then completed.
    assert_eq!(lines.len(), 18);
    let kinds: Vec<(String, String, String)> = lines
        .iter()
        .map(|l| {
            (
                l["event"].as_str().unwrap().to_owned(),
                l["tool"].as_str().unwrap().to_owned(),
                l["card"]["card"].as_str().unwrap().to_owned(),
            )
        })
        .filter(|(e, _, _)| e == "completed")
        .collect();
    let expected = [
        ("read_file", "generic"),
        ("grep", "search"),
        ("glob", "search"),
        ("write_file", "generic"),
        ("edit_file", "diff"),
        ("bash", "terminal"),
        ("web_fetch", "web"),
        ("read_file", "generic"),
        ("run_code", "generic"),
    ];
    assert_eq!(
        kinds,
        expected
            .iter()
            .map(|(t, c)| ("completed".to_owned(), (*t).to_owned(), (*c).to_owned()))
            .collect::<Vec<_>>()
    );
    let run_code_token = lines[0]["token"].clone();
    assert!(lines[1..17].iter().all(|l| l["parent"] == run_code_token));
    let edit = lines
        .iter()
        .find(|l| l["tool"] == "edit_file" && l["event"] == "completed")
        .unwrap();
    assert_eq!(
        edit["card"],
        serde_json::json!({"card": "diff", "path": "a.txt", "hunks": [{"old_start": 2, "old_lines": ["beta"], "new_start": 2, "new_lines": ["gamma"]}]})
    );
    let web = lines
        .iter()
        .find(|l| l["tool"] == "web_fetch" && l["event"] == "completed")
        .unwrap();
    assert_eq!(web["card"]["kind"], "fetch");
    assert_eq!(web["card"]["title"], "The Page");

    // Replayed from the records alone (the files changed since, no server, no clock).
    std::fs::remove_dir_all(root).unwrap();
    std::fs::create_dir(root).unwrap();
    let files = codemode::FileTools::new(root).unwrap();
    let mut tools = files.tools();
    tools.extend(files.write_tools());
    tools.push(files.shell_tool());
    tools.push(codemode::web_fetch_tool(codemode::AllowedHosts::default()));
    tools.push(codemode::run_code::run_code_tool(Default::default()));
    let tool = |name: &str| tools.iter().find(|t| t.name() == name).unwrap();
    let mut pending = std::collections::HashMap::new();
    for line in &lines {
        let name = line["tool"].as_str().unwrap();
        if line["event"] == "pending" {
            pending.insert(line["call"].clone(), line["card"].clone());
            continue;
        }
        let record: codemode::cards::CardRecord =
            serde_json::from_value(line["record"].clone()).unwrap();
        let call = serde_json::to_value(tool(name).present_call(&record.arguments)).unwrap();
        assert_eq!(call, pending[&line["call"]], "{name}");
        let result =
            serde_json::to_value(tool(name).present_result(&record.arguments, &record.outcome()))
                .unwrap();
        assert_eq!(result, line["card"], "{name}");
    }
    // Old or malformed arguments give the generic card, never a panic.
    let odd = serde_json::json!({"path": 5});
    let card = serde_json::to_value(tool("edit_file").present_call(&odd)).unwrap();
    assert_eq!(card["card"], "generic");
    let record = codemode::cards::CardRecord {
        tool: "edit_file".into(),
        arguments: odd.clone(),
        value: Some(serde_json::json!({"unexpected": true})),
        error: None,
        text: String::new(),
        meta: None,
    };
    let card =
        serde_json::to_value(tool("edit_file").present_result(&odd, &record.outcome())).unwrap();
    assert_eq!(card["card"], "generic");
}

#[test]
fn read_only_runs_refuse_every_tool_not_marked_read_only_and_declarations_show_the_marks() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("a.txt"), "a\n").unwrap();
    std::fs::write(
        root.join("m.json"),
        r#"{"tools": [
            {"name": "look", "command": ["echo", "1"], "annotations": {"readOnlyHint": true}},
            {"name": "touch", "command": ["echo", "2"]}
        ]}"#,
    )
    .unwrap();
    let manifest = root.join("m.json");
    let program = r#"
        const seen = {};
        for (const [name, args] of [["read_file", {path: "a.txt"}], ["look", {}], ["touch", {}], ["write_file", {path: "b.txt", content: "x"}]]) {
            try { await tools[name](args); seen[name] = "ran"; } catch (e) { seen[name] = e.message; }
        }
        return seen;
    "#;
    let (code, v, err) = run(
        root,
        &[
            "--read-only",
            "--allow",
            "write",
            "--tools",
            manifest.to_str().unwrap(),
        ],
        program,
    );
    assert_eq!(code, 0, "{v} {err}");
    let refused = "refused: this run is --read-only and the tool is not marked read-only";
    assert_eq!(
        v["result"],
        serde_json::json!({"read_file": "ran", "look": "ran", "touch": refused, "write_file": refused})
    );
    assert!(!root.join("b.txt").exists());

    let out = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["types", "--root"])
        .arg(root)
        .args(["--tools", manifest.to_str().unwrap()])
        .output()
        .unwrap();
    let types = String::from_utf8_lossy(&out.stdout);
    for mark in [
        "/** [read-only] Read a text file",
        "/** [destructive] Create a file or replace",
        "/** [destructive, open-world] Run a shell command",
        "/** [read-only, open-world] Fetch a web page",
        "/** [read-only] */",
    ] {
        assert!(types.contains(mark), "{mark} in\n{types}");
    }
}

#[test]
fn ask_asks_on_a_terminal_and_pauses_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let program = root.join("p.js");
    std::fs::write(
        &program,
        r#"await tools.write_file({path: "one.txt", content: "1"});
await tools.write_file({path: "two.txt", content: "2"});
let shell;
try { await tools.bash({command: "echo hi"}); shell = "ran"; } catch (e) { shell = e.message; }
return shell;"#,
    )
    .unwrap();
    let bin = env!("CARGO_BIN_EXE_codemode");
    let command = format!(
        "{bin} run {} --root {} --ask",
        program.display(),
        root.display()
    );
    // On a pseudo-terminal (script(1)): "a" (always) for the first write, which covers the
    // second; "n" for the shell.
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"a\nn\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let shown = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert_eq!(
        shown.matches("allow? [y]es, [n]o, [a]lways for").count(),
        2,
        "{shown}"
    );
    assert!(shown.contains("codemode: write_file wants to write one.txt (1 bytes)\n  (write_file is not allowed by --allow write) allow?"), "{shown}");
    assert!(
        shown.contains("codemode: bash wants to run: echo hi\n"),
        "{shown}"
    );
    assert!(
        shown.ends_with("result: \"bash: denied at the terminal\"\n"),
        "{shown}"
    );
    assert_eq!(std::fs::read_to_string(root.join("one.txt")).unwrap(), "1");
    assert_eq!(std::fs::read_to_string(root.join("two.txt")).unwrap(), "2");

    // Without a terminal, the run pauses at the call (exit status 3) and `codemode resume`
    // continues it from the folder of paused runs, with the same tool options.
    let paused_dir = root.join("paused");
    let paused_flag = format!("--paused-dir={}", paused_dir.display());
    let program =
        "const r = await tools.write_file({path: 'three.txt', content: '3'}); return r.bytes";
    let cards = root.join("cards.jsonl");
    let cards_flag = format!("--cards={}", cards.display());
    let (code, v, stderr) = run(root, &["--ask", &paused_flag, &cards_flag], program);
    assert_eq!(code, 3, "{v:#}");
    assert_eq!(v["status"], "paused");
    assert_eq!(v["paused"]["approvals"][0]["call"], 1);
    assert_eq!(
        v["paused"]["approvals"][0]["prompt"],
        "write_file is not allowed by --allow write"
    );
    let id = v["paused"]["id"].as_str().unwrap();
    assert!(
        stderr.contains(&format!(
            "codemode resume {id} --approve 1 --paused-dir {}",
            paused_dir.display()
        )),
        "{stderr}"
    );
    assert!(!root.join("three.txt").exists());
    let resume = |decision: &str| {
        Command::new(env!("CARGO_BIN_EXE_codemode"))
            .args(["resume", id, decision, "1", "--json", &paused_flag])
            // From elsewhere: the run's own folder and options count.
            .current_dir("/")
            .output()
            .unwrap()
    };
    let out = resume("--approve");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{v:#}");
    assert_eq!(v["result"], 1);
    assert_eq!(
        std::fs::read_to_string(root.join("three.txt")).unwrap(),
        "3"
    );
    // The cards: run_code and the write pending, the write paused; then, appended by the
    // resume, run_code_resume, the write again, and both completed.
    let events: Vec<(String, String)> = std::fs::read_to_string(&cards)
        .unwrap()
        .lines()
        .map(|l| {
            let line: Value = serde_json::from_str(l).unwrap();
            (
                line["event"].as_str().unwrap().to_owned(),
                line["tool"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("pending", "run_code"),
        ("pending", "write_file"),
        ("paused", "write_file"),
        ("completed", "run_code"),
        ("pending", "run_code_resume"),
        ("pending", "write_file"),
        ("completed", "write_file"),
        ("completed", "run_code_resume"),
    ]
    .map(|(e, t)| (e.to_owned(), t.to_owned()));
    assert_eq!(events, expected);
    // Once resumed, the id is gone.
    let out = resume("--approve");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("there is no paused run"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn bash_runs_with_the_environment_of_manifest_commands() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["run", "-", "--json", "--allow", "shell", "--root"])
        .arg(dir.path())
        .env("CODEMODE_TEST_SECRET", "hidden")
        .env("PATH", std::env::var("PATH").unwrap())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"return (await tools.bash({command: 'env'})).stdout")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let env = v["result"].as_str().unwrap();
    assert!(!env.contains("CODEMODE_TEST_SECRET"), "{env}");
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");
    let names: Vec<&str> = env.lines().filter_map(|l| l.split('=').next()).collect();
    // The manifest commands' list, and what bash sets for itself.
    let own = ["PWD", "SHLVL", "_", "OLDPWD"];
    assert!(
        names
            .iter()
            .all(|n| codemode::manifest::ENV_ALLOW_LIST.contains(n) || own.contains(n)),
        "{names:?}"
    );
}

#[test]
fn fifos_are_neither_edited_nor_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let made = Command::new("mkfifo")
        .arg(root.join("pipe"))
        .status()
        .unwrap();
    assert!(made.success());
    let program = r#"
        const seen = [];
        for (const call of [
            () => tools.edit_file({path: "pipe", old_text: "a", new_text: "b"}),
            () => tools.write_file({path: "pipe", content: "x"}),
        ]) { try { await call(); seen.push("done"); } catch (e) { seen.push(e.message); } }
        return seen;
    "#;
    let (code, v, err) = run(root, &["--allow", "write"], program);
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(
        v["result"],
        serde_json::json!([
            "pipe: not a regular file (a FIFO, a socket or a device); edit_file edits files",
            "pipe: not a regular file (a FIFO, a socket or a device); it is left as it is",
        ])
    );
    use std::os::unix::fs::FileTypeExt;
    assert!(
        std::fs::symlink_metadata(root.join("pipe"))
            .unwrap()
            .file_type()
            .is_fifo()
    );
}

#[test]
fn a_signal_stops_a_program_in_a_cpu_loop() {
    // The run's thread is busy in the engine: the signal is watched on another thread,
    // whose cancellation the engine's interrupt handler reads.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let program = root.join("p.js");
    // The second loop's turns spend their time in a built-in and catch what it throws: the
    // engine looks at the signal only every 10 000 turns, so the process ends by itself.
    let loops = [
        "while (true) {}",
        "const s = 'ab'.repeat(1e6);\nfor (;;) try { encodeURIComponent(s) } catch {}",
    ];
    for (signal, body) in [
        (libc::SIGINT, loops[0]),
        (libc::SIGTERM, loops[0]),
        (libc::SIGTERM, loops[1]),
    ] {
        std::fs::write(
            &program,
            format!("await tools.write_file({{path: 'started', content: 'x'}});\n{body}"),
        )
        .unwrap();
        let _ = std::fs::remove_file(root.join("started"));
        let child = Command::new(env!("CARGO_BIN_EXE_codemode"))
            .args(["run", program.to_str().unwrap(), "--root"])
            .arg(root)
            .args(["--allow", "write", "--timeout", "60s"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !root.join("started").exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "the program never started"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let sent = std::time::Instant::now();
        // SAFETY: kill(2) sends a signal to the child this test started.
        unsafe { libc::kill(child.id() as i32, signal) };
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130), "{out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("stopped by a signal"),
            "{out:?}"
        );
        // Long before the 60 s timeout (bounded generously: debug builds, busy machines).
        assert!(
            sent.elapsed() < std::time::Duration::from_secs(30),
            "{:?}",
            sent.elapsed()
        );
    }
}

/// Asserts that process `pid` is gone (or a zombie waiting to be reaped) within 10 s.
fn assert_gone_soon(pid: u32) {
    let gone = || match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !gone() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(gone(), "the tool's process {pid} outlived the command");
}

/// A loop whose turns spend their time in a built-in that allocates nothing: the engine
/// looks at the clock only every 10 000 turns, minutes after a short timeout.
pub(crate) const STUCK_PAST_ITS_TIMEOUT: &str =
    "const s = 'x'.repeat(3e7);\nfor (;;) s.indexOf('y')";

#[test]
fn a_run_that_does_not_stop_at_its_timeout_is_given_up_5_s_later() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.html");
    let started = std::time::Instant::now();
    let (code, v, _) = run(
        dir.path(),
        &["--timeout", "300ms", "--report", report.to_str().unwrap()],
        STUCK_PAST_ITS_TIMEOUT,
    );
    let took = started.elapsed();
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["status"], "error");
    assert_eq!(v["error"]["name"], "TimeoutError", "{v}");
    assert_eq!(
        message(&v),
        "the program did not finish within its 300 ms timeout and had not stopped 5 s later (a loop whose turns spend their time in a built-in that allocates nothing, such as indexOf over a very long string, stops only at the engine's next check); nothing waits for it any more, and its console output is not returned"
    );
    // Not before the grace, and long before the engine's own check (over 30 s).
    assert!(took >= std::time::Duration::from_millis(5300), "{took:?}");
    assert!(took < std::time::Duration::from_secs(25), "{took:?}");
    // The report is written: the run ends with that error when it was given up on.
    let html = std::fs::read_to_string(&report).unwrap();
    let data = crate::report::data_of(&html);
    let top = &data["calls"][0];
    assert_eq!(
        (top["tool"].as_str(), top["st"].as_str()),
        (Some("run_code"), Some("error")),
        "{top}"
    );
    assert!(top["e"].as_u64().unwrap() >= 5_300_000, "{top}");
    assert!(html.contains("had not stopped 5 s later"));

    // A run that yields (a job from its start) ends the same, from its job.
    let started = std::time::Instant::now();
    let (code, v, err) = run(
        dir.path(),
        &["--timeout", "300ms", "--yield-after", "100ms"],
        STUCK_PAST_ITS_TIMEOUT,
    );
    let took = started.elapsed();
    assert_eq!(code, 1, "{v}");
    assert!(message(&v).contains("had not stopped 5 s later"), "{v}");
    // Followed on stderr: said once, a second past the timeout, never "still running".
    assert_eq!(
        err,
        "codemode: run_code-1 has not stopped at its 300 ms timeout; it is given up on 5 s past it\n"
    );
    // Without waiting for the job's thread at the end (10 s more).
    assert!(took >= std::time::Duration::from_millis(5300), "{took:?}");
    assert!(took < std::time::Duration::from_secs(14), "{took:?}");

    // A run that stops at its timeout answers as it always did, with its console lines.
    let (code, v, _) = run(
        dir.path(),
        &["--timeout", "300ms"],
        "console.log('before'); for (;;) {}",
    );
    assert_eq!(code, 1, "{v}");
    assert_eq!(
        message(&v),
        "the program did not finish within its 300 ms timeout"
    );
    assert_eq!(v["logs"][0]["text"], "before", "{v}");
}

#[test]
fn a_run_given_up_on_leaves_no_process_its_tools_started() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("sleep.pid");
    let program = format!(
        "tools.bash({{command: 'echo $$ > {}; exec sleep 60'}}).catch(() => {{}});\n\
         await new Promise((r) => setTimeout(r, 300));\n{STUCK_PAST_ITS_TIMEOUT}",
        pidfile.display()
    );
    let (code, v, _) = run(
        dir.path(),
        &["--allow", "shell", "--timeout", "1s"],
        &program,
    );
    assert_eq!(code, 1, "{v}");
    assert!(message(&v).contains("had not stopped 5 s later"), "{v}");
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Killed before the process exited; gone once init has reaped it.
    assert_gone_soon(pid);
}

#[test]
fn a_signal_to_a_stuck_run_that_yielded_leaves_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("sleep.pid");
    let program = dir.path().join("p.js");
    std::fs::write(
        &program,
        format!(
            "tools.bash({{command: 'echo $$ > {}; exec sleep 60'}}).catch(() => {{}});\n{STUCK_PAST_ITS_TIMEOUT}",
            pidfile.display()
        ),
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["run", program.to_str().unwrap(), "--root"])
        .arg(dir.path())
        .args([
            "--allow",
            "shell",
            "--timeout",
            "60s",
            "--yield-after",
            "100ms",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let pid: u32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            break pid;
        }
        assert!(
            std::time::Instant::now() < until,
            "the command never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: kill(2) sends a signal to the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{out:?}");
    assert_gone_soon(pid);
}

#[test]
fn a_yielded_run_keeps_its_timeout_and_a_signal_ends_its_processes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (code, v, _) = run(
        root,
        &["--yield-after", "100ms", "--timeout", "600ms"],
        "await new Promise(r => setTimeout(r, 3000)); return 'late'",
    );
    assert_eq!(code, 1);
    assert_eq!(v["error"]["name"], "TimeoutError", "{v}");

    let marker = format!("codemode-term-{}", std::process::id());
    let program = root.join("p.js");
    std::fs::write(
        &program,
        format!("await tools.bash({{command: 'sleep 60; echo {marker}'}})"),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args([
            "run",
            program.to_str().unwrap(),
            "--root",
            root.to_str().unwrap(),
        ])
        .args(["--allow", "shell", "--yield-after", "100ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while crate::support::processes_with(&marker) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: kill(2) sends SIGTERM to the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(
        crate::support::processes_left(&marker, std::time::Duration::from_secs(5)),
        0,
        "the job's command was killed"
    );
}
