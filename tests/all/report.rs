//! The run report (`codemode run --report FILE.html`, `codemode::report`): what the file
//! holds, that nothing from the run can run in it, that it stays small for 10 000 calls,
//! and what headless Chromium shows of it.
//!
//! The browser tests use Debian's `chromium`, installed with `apt-get` when missing; where
//! it cannot be installed they say so on stderr and check the file alone.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use codemode::report::{RecordedStatus, RunRecorder, render_html};
use codemode::run_code::{Limits, RunCodeConfig, run_code_tool};
use serde_json::{Value, json};

use crate::act::{http_server, run};

/// Debian's Chromium, installed on first use (once per test process); `None`, with the
/// reason on stderr, where it is not installed and cannot be.
fn chromium() -> Option<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let known = || {
                ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
                    .into_iter()
                    .map(PathBuf::from)
                    .find(|p| p.exists())
            };
            if let Some(found) = known() {
                return Some(found);
            }
            let apt = |args: &[&str]| {
                Command::new("apt-get")
                    .args(args)
                    .env("DEBIAN_FRONTEND", "noninteractive")
                    .stdout(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            };
            let install = ["install", "-y", "-q", "--no-install-recommends", "chromium"];
            if !apt(&install) {
                apt(&["update", "-q"]);
                apt(&install);
            }
            let found = known();
            if found.is_none() {
                eprintln!(
                    "SKIPPED the browser checks: Debian's chromium is not installed and `apt-get install chromium` failed (it needs root and the Debian mirror)"
                );
            }
            found
        })
        .as_deref()
}

/// Runs headless Chromium on `page` with `args` (`--dump-dom`, `--screenshot=…`); its
/// standard output. Panics past 120 s.
fn headless(browser: &Path, page: &Path, args: &[&str]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Read as it comes: a DOM larger than the pipe would otherwise block the browser.
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).map(|_| text)
    });
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("chromium did not finish with {page:?} in 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().unwrap().unwrap()
}

/// A registry with `run_code` (under `limits` and an output cap of `cap` characters, no
/// spill) and `tool`, and a recorder observing it (recording while the hook lives).
fn recorded(
    limits: Limits,
    cap: usize,
    tool: codemode::ToolBuilder,
) -> (codemode::Registry, RunRecorder, codemode::hooks::HookHandle) {
    let registry = codemode::Registry::new();
    let config = RunCodeConfig::default()
        .limits(limits)
        .output_cap(cap)
        .spill(None);
    for t in [run_code_tool(config), tool.build().unwrap()] {
        registry.register(t).unwrap().forget();
    }
    let recorder = RunRecorder::new();
    let hook = registry.observe(recorder.clone());
    (registry, recorder, hook)
}

/// The data block of a report, parsed.
pub(crate) fn data_of(html: &str) -> Value {
    let start = html.find("id=\"report-data\">").unwrap() + "id=\"report-data\">".len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).unwrap()
}

/// Where a test keeps what it made for people to look at: `target/test-artifacts/`.
fn artifact(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The program of the first test; `throw` is on line 14.
const PROGRAM: &str = r#"const a = await tools.read_file({path: "a.txt"});
const [found, listed] = await Promise.all([
  tools.grep({pattern: "needle", max_results: 2}),
  tools.glob({pattern: "**/*.txt"}),
]);
await tools.write_file({path: "new.txt", content: "one\ntwo\n"});
await tools.edit_file({path: "new.txt", old_text: "two", new_text: "three"});
const shell = await tools.bash({command: "echo hello-from-bash"});
const page = await tools.web_fetch({url: "URL"});
console.log("<script>document.title='pwned-by-log'</script>");
console.warn("careful: <img src=x onerror=\"document.title='pwned-by-img'\">");
try { await tools.read_file({path: "missing.txt"}); } catch (e) {}
const n = found.matches.length + listed.matches.length;
throw new Error("stopped after " + n + " <b>hits</b>");
"#;

/// Runs [`PROGRAM`] with `--report`; the report's path (in `dir`) and the run's value.
fn report_of_a_run(dir: &Path) -> (PathBuf, Value) {
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(
        root.join("a.txt"),
        "needle one\n<img src=x onerror=\"document.title='pwned-by-tool'\">\n",
    )
    .unwrap();
    std::fs::write(root.join("b.txt"), "needle two\nneedle three\n").unwrap();
    std::fs::write(root.join("c.txt"), "needle four\nneedle five\n").unwrap();
    let port = http_server(1);
    let program = PROGRAM.replace("URL", &format!("http://127.0.0.1:{port}/page"));
    let report = dir.join("run.html");
    let allow = format!("net=127.0.0.1:{port}");
    let (code, value, err) = run(
        &root,
        &[
            "--allow",
            "write",
            "--allow",
            "shell",
            "--allow",
            &allow,
            "--report",
            report.to_str().unwrap(),
        ],
        &program,
    );
    assert_eq!(code, 1, "{value} {err}");
    (report, value)
}

#[test]
fn a_report_holds_every_call_its_cards_the_console_and_the_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let (report, value) = report_of_a_run(dir.path());
    assert_eq!(value["error"]["message"], "stopped after 5 <b>hits</b>");
    assert_eq!(value["error"]["line"], 14);
    let html = std::fs::read_to_string(&report).unwrap();

    // Self-contained: nothing is fetched from anywhere.
    for outside in ["src=\"http", "href=\"http", "@import", "url("] {
        assert!(!html.contains(outside), "{outside}");
    }
    assert!(html.contains(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'sha256-"
    ));
    // Every string from the run is escaped, in the markup and in the data.
    assert!(!html.contains("<script>document.title"));
    assert!(!html.contains("<img src=x"));
    assert!(html.contains(
        "<span class=\"text\">&lt;script&gt;document.title=&#39;pwned-by-log&#39;&lt;/script&gt;</span>"
    ));
    assert!(html.contains("<div class=\"log log-warn\"><span class=\"level\">warn</span>"));
    assert_eq!(
        html.matches("<script").count(),
        2,
        "the data block and the report's script"
    );

    // The error, and its line marked in the program.
    assert!(html.contains(
        "<div class=\"line error-line\" id=\"L14\"><span class=\"no\">14</span><code>throw new Error(&quot;stopped after &quot; + n + &quot; &lt;b&gt;hits&lt;/b&gt;&quot;);</code></div>"
    ));
    assert!(html.contains("^ Error: stopped after 5 &lt;b&gt;hits&lt;/b&gt; (line 14, column "));
    assert_eq!(html.matches("class=\"line error-line\"").count(), 1);

    // The limits, with what the run used.
    assert!(html.contains(
        "<tr data-limit=\"tool calls\"><td>tool calls</td><td>8</td><td>10000</td><td><meter min=\"0\" max=\"10000\" low=\"5000\" high=\"9000\" optimum=\"0\" value=\"8\"></meter> 0%</td></tr>"
    ));
    assert!(
        html.contains(
            "<tr data-limit=\"calls at once\"><td>calls at once</td><td>2</td><td>128</td>"
        )
    );
    assert!(html.contains("<tr data-limit=\"memory\"><td>memory</td><td>"));
    let memory = html.split("<tr data-limit=\"memory\">").nth(1).unwrap();
    let used: u64 = memory
        .split("value=\"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(used > 100_000 && used < 64 << 20, "memory used: {used}");
    assert!(memory.contains("<td>64 MiB</td>"), "{memory}");

    // The calls: run_code and its nine, nested under it, with their cards.
    let data = data_of(&html);
    let calls = data["calls"].as_array().unwrap();
    let tools: Vec<&str> = calls.iter().map(|c| c["tool"].as_str().unwrap()).collect();
    assert_eq!(
        tools,
        [
            "run_code",
            "read_file",
            "grep",
            "glob",
            "write_file",
            "edit_file",
            "bash",
            "web_fetch",
            "read_file"
        ]
    );
    assert!(calls[1..].iter().all(|c| c["p"] == 0 && c["d"] == 1));
    assert_eq!(calls[0]["d"], 0);
    assert_eq!(calls[0]["st"], "error");
    assert_eq!(calls[8]["st"], "error");
    let grep = &calls[2];
    assert_eq!(grep["rc"]["card"], "search");
    assert_eq!(grep["rc"]["truncated"], true);
    assert_eq!(grep["rc"]["total"], 5);
    assert_eq!(calls[5]["rc"]["card"], "diff");
    assert_eq!(calls[5]["rc"]["hunks"][0]["new_lines"], json!(["three"]));
    assert_eq!(calls[6]["cc"]["card"], "terminal");
    assert_eq!(calls[6]["rc"]["raw_output"], "hello-from-bash\n");
    assert_eq!(calls[7]["rc"]["card"], "web");
    // grep and glob ran at once: they share no row.
    assert_ne!(calls[2]["r"], calls[3]["r"]);
    assert!(calls[2]["s"].as_u64() < calls[3]["e"].as_u64());

    let Some(browser) = chromium() else { return };
    let dom = headless(browser, &report, &["--dump-dom"]);
    // The report's own script ran: the call list is drawn from the data.
    for tool in &tools[1..] {
        assert!(dom.contains(&format!("data-tool=\"{tool}\"")), "{tool}");
    }
    assert_eq!(dom.matches("<li class=\"call ").count(), 9);
    for card in [
        "card-search",
        "card-diff",
        "card-terminal",
        "card-web",
        "card-generic",
    ] {
        assert!(dom.contains(&format!("class=\"card {card}")), "{card}");
    }
    assert!(dom.contains("<div class=\"truncated\">truncated: 2 of 5</div>"));
    assert!(dom.contains("<span class=\"del\">-two</span><span class=\"add\">+three</span>"));
    assert!(dom.contains("<pre class=\"terminal-output\">hello-from-bash\n</pre>"));
    assert!(dom.contains("class=\"line error-line\" id=\"L14\""));
    // Nothing from the run ran: the title is the report's, no element came from the data.
    assert!(
        dom.contains("<title>standard input · codemode run report</title>"),
        "{dom}"
    );
    assert!(!dom.contains("<img"));
    assert!(!dom.contains("<b>hits</b>"));

    let shot = artifact("report-timeline.png");
    let _ = std::fs::remove_file(&shot);
    headless(
        browser,
        &report,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,900",
        ],
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
}

#[test]
fn the_policy_lets_no_script_run_but_the_reports_own() {
    let dir = tempfile::tempdir().unwrap();
    let (report, _) = report_of_a_run(dir.path());
    let html = std::fs::read_to_string(&report).unwrap();
    // As if escaping had failed: markup of the run's own, straight into the page.
    let injected = html.replacen(
        "<section id=\"timeline\">",
        "<script>document.title='pwned-inline'</script>\
         <img src=\"data:,x\" onerror=\"document.title='pwned-handler'\">\
         <section id=\"timeline\">",
        1,
    );
    let page = dir.path().join("injected.html");
    std::fs::write(&page, injected).unwrap();
    let Some(browser) = chromium() else { return };
    let dom = headless(browser, &page, &["--dump-dom"]);
    assert!(
        dom.contains("<title>standard input · codemode run report</title>"),
        "{dom}"
    );
    // The report's own script still ran.
    assert_eq!(dom.matches("<li class=\"call ").count(), 9);
}

#[test]
fn a_report_of_ten_thousand_calls_stays_small_and_opens() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let limits = Limits::default().max_tool_calls(20_000);
    let cap = 20_000;
    let lookup = codemode::Tool::builder("lookup").execute(|args, _e| async move {
        // Every other call fails with a message as long as its arguments.
        if args["i"].as_u64().unwrap_or(0) % 2 == 1 {
            return Err(codemode::ToolError::new(args["pad"].to_string()));
        }
        Ok(json!({"echo": (*args).clone()}))
    });
    let (registry, recorder, _hook) = recorded(limits.clone(), cap, lookup);
    // Each call carries 3 000 characters that take six bytes each in the page, and half
    // fail with as long a message, so that the details pass the report's budget.
    let program = "const pad = '<'.repeat(3000);\n\
        const all = [];\n\
        for (let i = 0; i < 10000; i++) all.push(tools.lookup({i, pad}));\n\
        const got = await Promise.allSettled(all);\n\
        return got.length";
    let value = rt
        .block_on(registry.call("run_code", json!({"code": program})))
        .into_result()
        .unwrap();
    assert_eq!(value["result"], 10_000, "{value}");
    let run = recorder.finish("ten thousand", program, value, limits, cap);
    assert_eq!(run.calls.len(), 10_001);
    let failed = run
        .calls
        .iter()
        .filter(|c| c.status == RecordedStatus::Error)
        .count();
    assert_eq!(failed, 5_000);
    let left_out = run.calls.iter().filter(|c| c.details_left_out).count();
    assert!(left_out > 9_000 && left_out < 10_000, "{left_out}");
    assert!(
        run.calls
            .iter()
            .filter(|c| c.details_left_out)
            .all(|c| c.error.is_none() && c.result_card.is_none())
    );
    let usage = run.usage.clone().unwrap();
    assert_eq!(usage.tool_calls, 10_000);
    let html = render_html(&run);
    // The details' budget (4 MiB as they take in the page) and about 100 bytes a call.
    assert!(html.len() < 6 << 20, "{} bytes", html.len());
    let data = data_of(&html);
    assert!(data["rows"].as_u64().unwrap() <= codemode::report::MAX_ROWS as u64);
    let page = artifact("report-10000-calls.html");
    std::fs::write(&page, &html).unwrap();
    let Some(browser) = chromium() else { return };
    let dom = headless(browser, &page, &["--dump-dom"]);
    // The list draws its first 200 calls and offers the rest in pages.
    assert_eq!(dom.matches("<li class=\"call ").count(), 200);
    assert!(
        dom.contains(">Show 200 more of 9801</button>"),
        "{}",
        &dom[..2000]
    );
    let without = data["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["x"] == true)
        .count();
    assert_eq!(without, left_out);
}

#[test]
fn cards_and_report_must_be_two_files_and_nothing_is_touched_when_they_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let cards = dir.path().join("out.jsonl");
    std::fs::write(&cards, "PRECIOUS").unwrap();
    std::os::unix::fs::symlink(&cards, dir.path().join("link.jsonl")).unwrap();
    std::fs::create_dir_all(dir.path().join("sub")).unwrap();
    for report in ["./out.jsonl", "link.jsonl", "sub/../out.jsonl"] {
        let out = Command::new(env!("CARGO_BIN_EXE_codemode"))
            .current_dir(dir.path())
            .args(["run", "-", "--cards", "out.jsonl", "--report", report])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{report}: {err}");
        assert!(err.contains("name the same file"), "{err}");
        assert_eq!(std::fs::read_to_string(&cards).unwrap(), "PRECIOUS");
    }
}

#[test]
fn a_report_that_cannot_be_written_fails_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/folder/run.html");
    let (code, err) = {
        let out = Command::new(env!("CARGO_BIN_EXE_codemode"))
            .args(["run", "-", "--allow", "write", "--root"])
            .arg(dir.path())
            .arg("--report")
            .arg(&missing)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(b"await tools.write_file({path: 'ran.txt', content: 'x'})")?;
                child.wait_with_output()
            })
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--report") && err.contains("no/such/folder/run.html"),
        "{err}"
    );
    assert!(
        !dir.path().join("ran.txt").exists(),
        "the program must not run"
    );
}

#[test]
fn observers_are_told_what_a_run_used() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let nop = codemode::Tool::builder("nop").execute(|_a, _e| async { Ok(json!(null)) });
    let (registry, recorder, _hook) = recorded(Limits::default(), 20_000, nop);
    // About 8 MB held at once (a string of 4 M UTF-16 code units is 8 MB in the engine
    // only when it is not Latin-1: `é` is, `ĕ` is not).
    let program = "const big = 'ĕ'.repeat(4 << 20); console.log('abc'); console.log('de');\n\
        await tools.nop({}); await tools.nop({}); await tools.nop({});\n\
        return big.length";
    let value = rt
        .block_on(registry.call("run_code", json!({"code": program})))
        .into_result()
        .unwrap();
    assert_eq!(value["result"], 4 << 20, "{value}");
    let run = recorder.finish("usage", program, value, Limits::default(), 20_000);
    let usage = run.usage.unwrap();
    assert_eq!(usage.tool_calls, 3);
    assert_eq!(usage.console_bytes, 4 + 3);
    assert!(
        usage.memory_peak > 8 << 20 && usage.memory_peak < 16 << 20,
        "{}",
        usage.memory_peak
    );
    assert!(usage.elapsed > Duration::ZERO);
    assert_eq!(run.calls.len(), 4);
}

/// Runs `program` with `codemode run - --report REPORT ARGS` in `root`; the exit code and
/// the report.
fn run_with_report(root: &Path, args: &[&str], program: &str) -> (i32, String) {
    let report = root.join("report.html");
    let mut all = vec!["--report", report.to_str().unwrap()];
    all.extend_from_slice(args);
    let (code, value, err) = run(root, &all, program);
    assert!(report.exists(), "{value} {err}");
    (code, std::fs::read_to_string(report).unwrap())
}

#[test]
fn lists_the_report_cut_are_drawn_with_what_was_left_out() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..250 {
        std::fs::write(dir.path().join(format!("f{i:03}.txt")), "x\n").unwrap();
    }
    std::fs::write(dir.path().join("many.log"), "hit\nmiss\n".repeat(300)).unwrap();
    // A name that reads like the report's own mark of a cut list.
    std::fs::write(dir.path().join("… [cut: 999 more items]"), "").unwrap();
    let program = "const g = await tools.glob({pattern: '*.txt'});\n\
        const m = await tools.grep({pattern: 'hit', glob: '*.log'});\n\
        const odd = await tools.glob({pattern: '…*'});\n\
        return [g.total, m.total, odd.total]";
    let (code, html) = run_with_report(dir.path(), &[], program);
    assert_eq!(code, 0);
    let data = data_of(&html);
    let glob = &data["calls"][1]["rc"];
    assert_eq!(glob["paths"]["items"].as_array().unwrap().len(), 200);
    assert_eq!(glob["paths"]["left_out"], 50);
    let Some(browser) = chromium() else { return };
    let page = dir.path().join("report.html");
    let dom = headless(browser, &page, &["--dump-dom"]);
    assert_eq!(
        dom.matches("<li class=\"call ").count(),
        4,
        "the page drew its calls"
    );
    assert!(dom.contains("<li class=\"mono\">… [cut: 999 more items]</li>"));
    assert!(!dom.contains("999 more paths"));
    assert!(dom.contains(">The report left out 50 more paths.</div>"));
    assert!(dom.contains(">250 matches</div>"));
    assert!(dom.contains(">The report left out 100 more matches in this file.</div>"));
    assert!(dom.contains(">300 matches</div>"));
}

#[test]
fn a_run_that_goes_on_as_a_job_is_drawn_to_its_end() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "x\n").unwrap();
    let program = "await tools.glob({pattern: '*'});\n\
        await new Promise(r => setTimeout(r, 300));\n\
        await tools.glob({pattern: '*.txt'});\n\
        return 'done'";
    let (code, html) = run_with_report(dir.path(), &["--yield-after", "50ms"], program);
    assert_eq!(code, 0);
    let data = data_of(&html);
    let calls = data["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[0]["tool"], "run_code");
    assert_eq!(calls[0]["st"], "ok");
    // The run's bar ends after its last call, not when its call answered "running".
    assert!(
        calls[0]["e"].as_u64() >= calls[2]["e"].as_u64(),
        "{calls:?}"
    );
    assert!(calls[0]["e"].as_u64().unwrap() - calls[0]["s"].as_u64().unwrap() >= 300_000);
    assert!(
        calls[0].get("rc").is_none(),
        "no card of the answer meant for the model"
    );
    assert!(html.contains("<pre class=\"result\">&quot;done&quot;</pre>"));
}

#[test]
fn an_interrupted_run_leaves_no_report_and_an_earlier_one_stays() {
    for earlier in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("run.html");
        if earlier {
            std::fs::write(&report, "earlier").unwrap();
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_codemode"))
            .args(["run", "-", "--allow", "shell", "--report"])
            .arg(&report)
            .arg("--root")
            .arg(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().unwrap();
            stdin
                .write_all(b"await tools.bash({command: 'sleep 20'})")
                .unwrap();
        }
        std::thread::sleep(Duration::from_millis(700));
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130));
        if earlier {
            assert_eq!(std::fs::read_to_string(&report).unwrap(), "earlier");
        } else {
            assert!(!report.exists());
        }
    }
}

#[test]
fn a_paused_run_s_report_names_the_calls_that_wait() {
    let dir = tempfile::tempdir().unwrap();
    let paused = dir.path().join("paused");
    let (code, html) = run_with_report(
        dir.path(),
        &["--ask", "--paused-dir", paused.to_str().unwrap()],
        "await tools.write_file({path: 'a.txt', content: 'x'}); return 1",
    );
    assert_eq!(code, 3);
    assert!(html.contains("<h2>Paused</h2>"));
    assert!(
        html.contains("<li>N = 1 <code>write_file</code>: "),
        "{html}"
    );
    let data = data_of(&html);
    assert_eq!(data["calls"][0]["st"], "paused");
    assert_eq!(data["calls"][1]["st"], "paused");
}
