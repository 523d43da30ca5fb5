//! `codemode mcp`, driven by real MCP clients: rmcp's (stdio and streamable HTTP), the
//! TypeScript SDK's (`tests/node/mcp-client.mjs`) and the official conformance suite.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ErrorCode, JsonObject,
};
use rmcp::service::{PeerRequestOptions, RoleClient, RunningService, ServiceError};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Value, json};

use crate::support::node_modules;

type Client = RunningService<RoleClient, ()>;

const BIN: &str = env!("CARGO_BIN_EXE_codemode");

fn repo(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(path)
        .to_string_lossy()
        .into_owned()
}

/// The test manifest's tools (`timing`, `sleep`, `echo`, …).
fn manifest() -> String {
    repo("tests/tools/manifest.json")
}

/// A client of `codemode mcp ARGS` over stdio.
async fn stdio(args: &[&str]) -> Client {
    let mut command = tokio::process::Command::new(BIN);
    command.arg("mcp").args(args).stderr(Stdio::inherit());
    ().serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap()
}

/// `codemode mcp ARGS --http 0`, running until dropped.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start(args: &[&str]) -> HttpServer {
        let mut child = Command::new(BIN)
            .arg("mcp")
            .args(args)
            .args(["--http", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = loop {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(url) = line.strip_prefix("codemode mcp: listening on ") {
                        break url.to_owned();
                    }
                    eprintln!("{line}");
                }
                _ => panic!("codemode mcp --http exited before listening"),
            }
        };
        // Keep reading, so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(|l| eprintln!("{}", l.unwrap_or_default())));
        HttpServer { child, url }
    }

    fn port(&self) -> u16 {
        self.url
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches("/mcp")
            .parse()
            .unwrap()
    }

    /// A new client (a new session).
    async fn client(&self) -> Client {
        ().serve(StreamableHttpClientTransport::from_uri(self.url.clone()))
            .await
            .unwrap()
    }
}

impl Drop for HttpServer {
    /// Stops the server as a user would (SIGTERM: it ends its sessions and removes its
    /// spill folder), killing it if it has not exited within 10 s.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(o) => o,
        other => panic!("not an object: {other}"),
    }
}

async fn call(client: &Client, name: &str, arguments: Value) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(object(arguments)))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

async fn run(client: &Client, code: &str) -> CallToolResult {
    call(client, "run_code", json!({ "code": code })).await
}

/// Every text content, joined by newlines.
fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .map(|t| t.text.clone())
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

/// Sends a `run_code` call and returns its handle, to cancel it or wait for it.
async fn start(client: &Client, code: &str) -> rmcp::service::RequestHandle<RoleClient> {
    let params =
        CallToolRequestParams::new("run_code").with_arguments(object(json!({ "code": code })));
    client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap()
}

fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z')),
    }
}

/// Waits (at most 30 s) until `check` holds; panics with `what` otherwise. Async: the
/// clients' tasks run on the test's thread meanwhile.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "gave up waiting: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A program that starts `sleep 60` through `bash` (writing its pid to `pidfile`) without
/// waiting for it, then runs `rest`.
fn sleeping_then(pidfile: &Path, rest: &str) -> String {
    format!(
        "tools.bash({{command: 'echo $$ > {}; exec sleep 60'}}).catch(() => {{}});\n{rest}",
        pidfile.display()
    )
}

/// The pid the manifest tool `sleep` writes to `pidfile`, once it is there.
async fn pid_in(pidfile: &Path) -> u32 {
    let mut pid = 0;
    eventually("the sleep tool writes its pid", || {
        pid = std::fs::read_to_string(pidfile)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0);
        pid != 0
    })
    .await;
    pid
}

#[tokio::test]
async fn tool_budget_lists_the_tools_by_name_and_programs_search_them() {
    let client = stdio(&[
        "--root",
        &repo("."),
        "--tools",
        &manifest(),
        "--tool-budget",
        "0",
    ])
    .await;
    let tools = client.list_all_tools().await.unwrap();
    let description = tools[0].description.as_deref().unwrap();
    assert!(
        !description.contains("interface ToolArgsMap"),
        "{description}"
    );
    assert!(
        description.contains("- edit_file: [destructive] Replace exact text in a file: old_text must occur once (or set…\n"),
        "{description}"
    );
    assert!(
        description.contains("`await tools.$search("),
        "{description}"
    );
    let answer = run(
        &client,
        "return (await tools.$search('regular expression search', 1))[0].name",
    )
    .await;
    assert_eq!(answer.structured_content.unwrap()["result"], "grep");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn run_code_is_listed_with_every_tool_s_declarations_and_read_spill() {
    let client = stdio(&["--root", &repo("."), "--tools", &manifest()]).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "run_code",
            "read_spill",
            "run_code_resume",
            "job_output",
            "job_kill",
            "job_list"
        ]
    );
    let run_code = &tools[0];
    let description = run_code.description.as_deref().unwrap();
    // Built-in and manifest tools, declared for the program.
    for declared in [
        "interface ToolArgsMap",
        "read_file: {",
        "grep: {",
        "timing: {",
    ] {
        assert!(
            description.contains(declared),
            "{declared} in {description}"
        );
    }
    assert_eq!(
        Value::Object((*run_code.input_schema).clone())["required"],
        json!(["code"])
    );
    assert_eq!(
        run_code
            .output_schema
            .as_deref()
            .cloned()
            .map(Value::Object),
        Some({
            // MCP's root `"type": "object"`, over the union of run_code's answers.
            let mut schema = codemode::run_code::run_code_output_schema().to_json_schema();
            schema["type"] = json!("object");
            schema
        })
    );
    let read_spill = &tools[1];
    assert_eq!(
        Value::Object((*read_spill.input_schema).clone())["required"],
        json!(["id"])
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn run_code_answers_with_the_capped_text_and_the_canonical_value() {
    let client = stdio(&["--root", &repo(".")]).await;
    let r = run(
        &client,
        "console.warn('careful'); const f = await tools.read_file({path: 'Cargo.toml', limit: 1}); return f.content",
    )
    .await;
    assert!(!is_error(&r));
    assert_eq!(text(&r), "[warn] careful\nresult: \"[workspace]\\n\"");
    let value = r.structured_content.unwrap();
    assert_eq!(value["status"], "ok");
    assert_eq!(value["result"], "[workspace]\n");
    assert_eq!(value["logs"], json!([{"level": "warn", "text": "careful"}]));
    assert_eq!(value["calls"][0]["tool"], "read_file");
    assert_eq!(value["calls"][0]["status"], "ok");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn runs_on_warm_engines_or_not_see_nothing_of_each_other() {
    // The default keeps 2 warm engines; 0 starts one per call. Either way, each call's
    // program starts from a fresh engine and its tools work.
    for args in [vec![], vec!["--warm-engines", "0"]] {
        let mut args: Vec<&str> = args.clone();
        args.extend(["--root", "."]);
        let client = stdio(&args).await;
        for round in 0..4 {
            let r = run(
                &client,
                "const before = [typeof globalThis.seen, typeof [].at]; globalThis.seen = 1; Array.prototype.at = null; const l = await tools.list_dir({path: '.'}); return [...before, l.entries.length > 0]",
            )
            .await;
            assert!(!is_error(&r), "{args:?} round {round}: {}", text(&r));
            assert_eq!(
                r.structured_content.unwrap()["result"],
                json!(["undefined", "function", true]),
                "{args:?} round {round}"
            );
        }
        client.cancel().await.unwrap();
    }
    let out = Command::new(BIN)
        .args(["mcp", "--warm-engines", "65"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("65 is not in 0..=64"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn failures_are_results_the_model_reads_and_the_server_answers_on() {
    let client = stdio(&["--root", &repo("."), "--memory", "8MiB"]).await;

    // Arguments that fail run_code's schema: refused by the pipeline, as a result.
    let r = call(&client, "run_code", json!({"code": 5})).await;
    assert!(is_error(&r));
    assert_eq!(
        text(&r),
        "invalid arguments for run_code:\nargs.code: expected string, got number — code: string /* The program: the body of an async function (TypeScript or JavaScript). */"
    );
    assert_eq!(r.structured_content, None);

    // A program that throws, and one that allocates without bound.
    let r = run(&client, "throw 'x'").await;
    assert!(is_error(&r));
    assert_eq!(
        text(&r),
        "error: Error: the program threw \"x\" (a string, not an Error)"
    );
    assert_eq!(r.structured_content.unwrap()["status"], "error");
    let r = run(
        &client,
        "const a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length)",
    )
    .await;
    assert!(is_error(&r));
    assert_eq!(
        text(&r),
        "error: OutOfMemory: the program ran out of memory: it may hold at most 8388608 bytes"
    );

    // A name the server does not offer is a JSON-RPC error (invalid params).
    for (name, message) in [
        (
            "nope",
            "unknown tool `nope`; the tools offered: run_code, run_code_resume, read_spill, job_output, job_kill, job_list",
        ),
        (
            "read_file",
            "tool `read_file` is not offered directly; call it from a run_code program as `await tools[\"read_file\"](args)` (the tools offered: run_code, run_code_resume, read_spill, job_output, job_kill, job_list)",
        ),
    ] {
        let e = client
            .call_tool(CallToolRequestParams::new(name.to_owned()))
            .await
            .unwrap_err();
        match e {
            ServiceError::McpError(e) => {
                assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
                assert_eq!(e.message, message);
            }
            other => panic!("{other}"),
        }
    }

    // The server answers on.
    let r = run(&client, "return 1 + 1").await;
    assert_eq!(text(&r), "result: 2");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn expose_tools_offers_the_direct_tools_through_the_pipeline() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "one\ntwo\n").unwrap();
    let server = HttpServer::start(&[
        "--root",
        root.path().to_str().unwrap(),
        "--tools",
        &manifest(),
        "--expose-tools",
    ]);
    let client = server.client().await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names[..10],
        [
            "run_code",
            "read_spill",
            "run_code_resume",
            "job_output",
            "job_kill",
            "job_list",
            "read_file",
            "list_dir",
            "glob",
            "grep"
        ]
    );
    // Each tool's annotations go with it (MCP's ToolAnnotations).
    let hints = |name: &str| {
        let a = tools
            .iter()
            .find(|t| t.name == name)
            .unwrap()
            .annotations
            .clone()
            .unwrap_or_default();
        (a.read_only_hint, a.destructive_hint, a.open_world_hint)
    };
    assert_eq!(hints("read_file"), (Some(true), None, Some(false)));
    assert_eq!(hints("bash"), (Some(false), Some(true), Some(true)));
    assert_eq!(hints("job_kill"), (Some(false), Some(true), Some(false)));
    assert!(
        names.contains(&"echo") && names.contains(&"timing"),
        "{names:?}"
    );
    let read_file = tools.iter().find(|t| t.name == "read_file").unwrap();
    assert_eq!(
        Value::Object((*read_file.input_schema).clone())["required"],
        json!(["path"])
    );
    assert!(read_file.output_schema.is_some());

    let r = call(&client, "read_file", json!({"path": "a.txt", "offset": 2})).await;
    assert!(!is_error(&r));
    assert_eq!(
        r.structured_content.unwrap(),
        json!({"path": "a.txt", "content": "two\n", "start_line": 2, "end_line": 2, "total_lines": 2, "truncated": false})
    );
    let r = call(&client, "echo", json!({"text": "hi"})).await;
    assert_eq!(r.structured_content.unwrap(), json!({"text": "hi"}));
    let r = call(&client, "read_file", json!({})).await;
    assert!(is_error(&r));
    assert_eq!(
        text(&r),
        "invalid arguments for read_file:\nargs.path: missing required property (expected string) — path: string /* File path, relative to the root. */"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn concurrent_runs_are_in_flight_at_once() {
    let client = stdio(&["--tools", &manifest()]).await;
    // Each run's call waits (at most 30 s) until both have started: two runs that ran one
    // after the other would not meet, and time out at 20 s instead.
    let meet = tempfile::tempdir().unwrap();
    let code = format!(
        "const r = await tools.timing({{ms: 0, meet: {:?}, of: 2}}); return 'met'",
        meet.path()
    );
    let args = json!({"code": code, "timeout_ms": 20_000});
    let (a, b) = tokio::join!(
        call(&client, "run_code", args.clone()),
        call(&client, "run_code", args)
    );
    assert_eq!(text(&a), "result: \"met\"");
    assert_eq!(text(&b), "result: \"met\"");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_run_in_a_cpu_loop_holds_up_no_other_and_is_cancelled() {
    let client = stdio(&["--tools", &manifest(), "--timeout", "120000"]).await;
    let meet = tempfile::tempdir().unwrap();
    let meeting = format!(
        "await tools.timing({{ms: 0, meet: {:?}, of: 2}});",
        meet.path()
    );
    // A spins from the meeting on; B, once met, waits a little and answers. On one thread
    // B would wait for A's 120 s timeout.
    let a = start(&client, &format!("{meeting} while (true) {{}}")).await;
    let b = tokio::time::timeout(
        Duration::from_secs(60),
        run(
            &client,
            &format!("{meeting} await new Promise((r) => setTimeout(r, 200)); return 'b'"),
        ),
    )
    .await
    .expect("a run answers while another spins");
    assert_eq!(text(&b), "result: \"b\"");
    let mut a = a;
    assert!(
        matches!(
            a.rx.try_recv(),
            Err(tokio::sync::oneshot::error::TryRecvError::Empty)
        ),
        "A still runs"
    );
    a.cancel(Some("enough".into())).await.unwrap();
    let r = run(&client, "return 'after'").await;
    assert_eq!(text(&r), "result: \"after\"");
    client.cancel().await.unwrap();
}

/// Starts the stuck program as a background job with `timeout_ms`; its job id.
async fn stuck_in_background(client: &Client, timeout_ms: u64) -> String {
    let r = call(
        client,
        "run_code",
        json!({"code": crate::act::STUCK_PAST_ITS_TIMEOUT, "timeout_ms": timeout_ms, "run_in_background": true}),
    )
    .await;
    r.structured_content.unwrap()["job_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_run_that_does_not_stop_at_its_timeout_is_answered_5_s_later_and_the_session_goes_on() {
    let client = stdio(&["--root", &repo(".")]).await;
    let started = Instant::now();
    // In the foreground (a run that waits past 10 s goes on as a job by default).
    let r = call(
        &client,
        "run_code",
        json!({"code": crate::act::STUCK_PAST_ITS_TIMEOUT, "timeout_ms": 300, "yield_after_ms": 0}),
    )
    .await;
    let took = started.elapsed();
    assert!(is_error(&r));
    let abandoned = "the program did not finish within its 300 ms timeout and had not stopped 5 s later (a loop whose turns spend their time in a built-in that allocates nothing, such as indexOf over a very long string, stops only at the engine's next check); nothing waits for it any more, and its console output is not returned";
    assert_eq!(
        text(&r),
        "error: TimeoutError: the program did not finish within its 300 ms timeout and had not stopped 5 s later (a loop whose turns spend their time in a built-in that allocates nothing, such as indexOf over a very long string, stops only at the engine's next check); nothing waits for it any more, and its console output is not returned"
    );
    assert_eq!(
        r.structured_content.as_ref().unwrap()["error"]["name"],
        "TimeoutError"
    );
    // Not before the grace, and long before the engine's own check (over 30 s).
    assert!(took >= Duration::from_millis(5300), "{took:?}");
    assert!(took < Duration::from_secs(25), "{took:?}");
    // The session answers on, and a run that stops at its timeout answers as before.
    let r = run(&client, "return 1 + 1").await;
    assert_eq!(text(&r), "result: 2");
    // With the server's yield (10 s) the run is a job from its start: its job ends as
    // overdue, and the call, still waiting for it, answers the same before the yield.
    let started = Instant::now();
    let r = call(
        &client,
        "run_code",
        json!({"code": crate::act::STUCK_PAST_ITS_TIMEOUT, "timeout_ms": 300}),
    )
    .await;
    let took = started.elapsed();
    assert!(is_error(&r));
    assert_eq!(
        r.structured_content.as_ref().unwrap()["error"]["message"],
        abandoned
    );
    assert!(took >= Duration::from_millis(5300), "{took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    // A background job's run: its job reads as finished with the error.
    let job = stuck_in_background(&client, 300).await;
    let r = call(
        &client,
        "job_output",
        json!({"job_id": job, "wait_ms": 20_000}),
    )
    .await;
    let report = r.structured_content.unwrap();
    assert_eq!(report["status"], "finished", "{report}");
    assert_eq!(report["value"]["error"]["message"], abandoned, "{report}");
    // Killed long before its timeout, such a job is given up on 5 s after the kill.
    let job = stuck_in_background(&client, 120_000).await;
    let r = call(&client, "job_kill", json!({"job_id": job})).await;
    let report = r.structured_content.unwrap();
    assert_eq!(report["status"], "killed", "{report}");
    let r = call(
        &client,
        "run_code",
        json!({"code": "for (;;) {}", "timeout_ms": 300}),
    )
    .await;
    assert_eq!(
        text(&r),
        "error: TimeoutError: the program did not finish within its 300 ms timeout"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_server_whose_client_leaves_kills_what_a_stuck_run_holds() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("sleep.pid");
    let client = stdio(&["--root", dir.path().to_str().unwrap(), "--allow", "shell"]).await;
    let code = sleeping_then(&pidfile, crate::act::STUCK_PAST_ITS_TIMEOUT);
    let params = CallToolRequestParams::new("run_code").with_arguments(object(
        json!({"code": code, "timeout_ms": 60_000, "yield_after_ms": 0}),
    ));
    let _call = client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    let pid = pid_in(&pidfile).await;
    // The client leaves while the run is stuck, long before its timeout: the server
    // ends, and the run's `sleep` with it.
    client.cancel().await.unwrap();
    eventually("the stuck run's process is killed", || !alive(pid)).await;
}

/// A run given up on (not stopped 5 s past its timeout) has the processes its calls started
/// killed when it is answered for, though its thread goes on and the server stays up; a
/// process of another run, still going, is left alone.
#[tokio::test]
async fn a_run_given_up_on_has_its_processes_killed_and_no_other_run_s() {
    let dir = tempfile::tempdir().unwrap();
    let (stuck_pid, other_pid) = (dir.path().join("stuck.pid"), dir.path().join("other.pid"));
    let client = stdio(&["--root", dir.path().to_str().unwrap(), "--allow", "shell"]).await;

    // Another run, in the background, whose `sleep` is still going when the stuck run is
    // given up on.
    let other = call(
        &client,
        "run_code",
        json!({"code": sleeping_then(&other_pid, "await new Promise(r => setTimeout(r, 20000));"), "timeout_ms": 60_000, "run_in_background": true}),
    )
    .await;
    assert!(!is_error(&other), "{}", text(&other));
    let other = pid_in(&other_pid).await;
    let r = call(
        &client,
        "run_code",
        json!({"code": sleeping_then(&stuck_pid, crate::act::STUCK_PAST_ITS_TIMEOUT), "timeout_ms": 300, "yield_after_ms": 0}),
    )
    .await;
    assert!(
        text(&r).contains("had not stopped 5 s later"),
        "{}",
        text(&r)
    );
    let stuck = pid_in(&stuck_pid).await;
    eventually("the stuck run's process is killed", || !alive(stuck)).await;
    assert!(alive(other), "another run's process was killed");
    let r = run(&client, "return 'still here'").await;
    assert_eq!(text(&r), "result: \"still here\"");
    client.cancel().await.unwrap();
}

/// A stuck run given up on because it was killed (`job_kill`) or its call cancelled, long
/// before its timeout, has the processes its calls started killed then too.
#[tokio::test]
async fn a_stuck_run_given_up_on_after_a_kill_or_a_cancel_has_its_processes_killed() {
    let dir = tempfile::tempdir().unwrap();
    let client = stdio(&["--root", dir.path().to_str().unwrap(), "--allow", "shell"]).await;
    let stuck = |pidfile: &Path| sleeping_then(pidfile, crate::act::STUCK_PAST_ITS_TIMEOUT);
    // A background job, killed.
    let pidfile = dir.path().join("killed.pid");
    let r = call(
        &client,
        "run_code",
        json!({"code": stuck(&pidfile), "timeout_ms": 120_000, "run_in_background": true}),
    )
    .await;
    let job = r.structured_content.unwrap()["job_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let pid = pid_in(&pidfile).await;
    let r = call(&client, "job_kill", json!({"job_id": job})).await;
    assert_eq!(r.structured_content.unwrap()["status"], "killed");
    eventually("the killed job's process is killed", || !alive(pid)).await;
    // A call in the foreground, cancelled.
    let pidfile = dir.path().join("cancelled.pid");
    let params = CallToolRequestParams::new("run_code").with_arguments(object(
        json!({"code": stuck(&pidfile), "timeout_ms": 120_000, "yield_after_ms": 0}),
    ));
    let call_handle = client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    let pid = pid_in(&pidfile).await;
    call_handle
        .cancel(Some("the test cancels".into()))
        .await
        .unwrap();
    eventually("the cancelled run's process is killed", || !alive(pid)).await;
    let r = run(&client, "return 'still here'").await;
    assert_eq!(text(&r), "result: \"still here\"");
    client.cancel().await.unwrap();
}

/// An HTTP session that ends (its client closes it) ends its jobs, also one whose run is
/// stuck in its engine: that one is given up on 5 s later, with the processes its calls
/// started, long before its own timeout; the server serves other sessions on.
#[tokio::test]
async fn a_session_that_ends_gives_up_on_its_stuck_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("stuck.pid");
    let server = HttpServer::start(&["--root", dir.path().to_str().unwrap(), "--allow", "shell"]);
    let client = server.client().await;
    let code = sleeping_then(&pidfile, crate::act::STUCK_PAST_ITS_TIMEOUT);
    let r = call(
        &client,
        "run_code",
        json!({"code": code, "timeout_ms": 120_000, "run_in_background": true}),
    )
    .await;
    assert!(!is_error(&r), "{}", text(&r));
    let pid = pid_in(&pidfile).await;
    let ended = Instant::now();
    client.cancel().await.unwrap();
    eventually("the stuck job's process is killed", || !alive(pid)).await;
    assert!(
        ended.elapsed() >= Duration::from_secs(4),
        "{:?}",
        ended.elapsed()
    );
    let other = server.client().await;
    let r = run(&other, "return 'still here'").await;
    assert_eq!(text(&r), "result: \"still here\"");
    other.cancel().await.unwrap();
}

#[tokio::test]
async fn cancelling_a_call_cancels_its_run_and_the_calls_it_made() {
    let server = HttpServer::start(&["--tools", &manifest()]);
    let client = server.client().await;
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("sleep.pid");
    let call = start(
        &client,
        &format!("await tools.sleep({{pidfile: {pidfile:?}}}); return 'not cancelled'"),
    )
    .await;
    let pid = pid_in(&pidfile).await;
    call.cancel(Some("the test cancels".into())).await.unwrap();
    eventually("the sleep tool is killed", || !alive(pid)).await;
    let r = run(&client, "return 'still here'").await;
    assert_eq!(text(&r), "result: \"still here\"");
    client.cancel().await.unwrap();
}

/// Reads a whole spill with `read_spill`, page by page; returns the pages' texts.
async fn read_spill(client: &Client, id: &str) -> Vec<String> {
    let mut pages = Vec::new();
    let mut offset = 0;
    loop {
        let r = call(client, "read_spill", json!({"id": id, "offset": offset})).await;
        assert!(!is_error(&r), "{}", text(&r));
        let page = r.structured_content.unwrap();
        assert_eq!(page["offset"], offset);
        pages.push(page["text"].as_str().unwrap().to_owned());
        match page.get("next_offset") {
            Some(next) => offset = next.as_u64().unwrap(),
            None => return pages,
        }
    }
}

#[tokio::test]
async fn spills_are_read_back_in_pages_by_their_own_session_only() {
    let server = HttpServer::start(&["--output-cap", "300"]);
    let a = server.client().await;
    let r = run(
        &a,
        "for (let i = 0; i < 100; i++) console.log('line ' + i); return 'done'",
    )
    .await;
    let value = r.structured_content.clone().unwrap();
    let spill = &value["spill"];
    let id = spill["id"].as_str().unwrap().to_owned();
    assert_eq!(spill["read_tool"], "read_spill");
    assert!(
        text(&r).ends_with(&format!(
            "\n[output cut to fit; all of it ({} bytes) is saved: read it in pages with read_spill {{\"id\": \"{id}\"}}.]",
            spill["bytes"]
        )),
        "{}",
        text(&r)
    );
    let pages = read_spill(&a, &id).await;
    let expected: String = (0..100)
        .map(|i| format!("line {i}\n"))
        .chain(["result: \"done\"\n".to_owned()])
        .collect();
    assert_eq!(pages.concat(), expected);
    assert_eq!(spill["bytes"], expected.len());
    // 805 bytes in pages of at most 300 (the output cap).
    let sizes: Vec<usize> = pages.iter().map(String::len).collect();
    assert_eq!(sizes, [300, 300, 205]);
    // The text a model reads says where the next page starts.
    let r = call(&a, "read_spill", json!({"id": id, "offset": 7, "limit": 7})).await;
    assert_eq!(
        text(&r),
        format!(
            "line 1\n[bytes 7-14 of {}; next page: read_spill {{\"id\": \"{id}\", \"offset\": 14}}]",
            expected.len()
        )
    );

    // Another session cannot read it, nor anything by path.
    let b = server.client().await;
    for other in [
        id.as_str(),
        "../../../etc/passwd",
        spill["path"].as_str().unwrap(),
    ] {
        let r = call(&b, "read_spill", json!({"id": other})).await;
        assert!(is_error(&r));
        assert_eq!(
            text(&r),
            format!(
                "read_spill: this session has no spill {}; only the spills of this session's run_code calls can be read, by the id their result names",
                Value::String(other.to_owned())
            )
        );
    }
    let r = call(&a, "read_spill", json!({"id": id, "offset": 100_000})).await;
    assert_eq!(
        text(&r),
        format!(
            "read_spill: offset 100000 is past the end of the spill ({} bytes)",
            expected.len()
        )
    );

    // A session's spills go when it ends.
    let path = PathBuf::from(spill["path"].as_str().unwrap());
    assert!(path.exists());
    a.cancel().await.unwrap();
    eventually("the ended session's spill is removed", || !path.exists()).await;
    b.cancel().await.unwrap();
    // And the server's private folder when it exits.
    let folder = path.parent().unwrap().to_owned();
    assert!(folder.exists());
    drop(server);
    assert!(!folder.exists(), "{} is left", folder.display());
}

/// Posts an `initialize` to the server with these headers; returns the status code and,
/// for an error, the body.
fn post_initialize(port: u16, host: &str, origin: Option<&str>) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}})
    .to_string();
    let origin = origin
        .map(|o| format!("Origin: {o}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{origin}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    let code: u16 = status.split(' ').nth(1).unwrap().parse().unwrap();
    if code < 300 {
        return (code, String::new());
    }
    let mut rest = String::new();
    reader.read_to_string(&mut rest).unwrap();
    let body = rest.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (code, body.to_owned())
}

#[test]
fn a_foreign_origin_or_host_is_refused() {
    let server = HttpServer::start(&[]);
    let port = server.port();
    let local = format!("127.0.0.1:{port}");
    assert_eq!(
        post_initialize(port, &local, Some("http://evil.example")),
        (403, "Forbidden: Origin header is not allowed".to_owned())
    );
    assert_eq!(
        post_initialize(port, "evil.example", None),
        (403, "Forbidden: Host header is not allowed".to_owned())
    );
    for origin in [
        None,
        Some(format!("http://127.0.0.1:{port}")),
        Some(format!("http://localhost:{port}")),
    ] {
        assert_eq!(post_initialize(port, &local, origin.as_deref()).0, 200);
    }
    assert_eq!(
        post_initialize(port, &format!("localhost:{port}"), None).0,
        200
    );
    // The server's own origin on another port is another origin.
    assert_eq!(
        post_initialize(port, &local, Some("http://127.0.0.1:1")).0,
        403
    );

    // More hosts and origins only when asked.
    let server = HttpServer::start(&[
        "--allow-host",
        "mcp.example",
        "--allow-origin",
        "https://app.example",
    ]);
    let port = server.port();
    let local = format!("127.0.0.1:{port}");
    assert_eq!(post_initialize(port, "mcp.example", None).0, 200);
    assert_eq!(
        post_initialize(port, &local, Some("https://app.example")).0,
        200
    );
    assert_eq!(
        post_initialize(port, &local, Some("https://app.example:443")).0,
        200
    );
    // An origin given without a port means the scheme's default port, not any port.
    assert_eq!(
        post_initialize(port, &local, Some("https://app.example:8443")).0,
        403
    );
    assert_eq!(
        post_initialize(port, &local, Some("http://evil.example")).0,
        403
    );
}

#[test]
fn an_allowed_origin_that_is_not_an_origin_is_a_set_up_error() {
    let out = Command::new(BIN)
        .args(["mcp", "--http", "0", "--allow-origin", "app.example/x"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "codemode: the allowed origin \"app.example/x\" is not an origin: an origin starts with http:// or https://\n"
    );
}

#[test]
fn an_address_in_use_is_a_set_up_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let out = Command::new(BIN)
        .args(["mcp", "--http", &port.to_string()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(&format!("codemode: cannot listen on 127.0.0.1:{port}: ")),
        "{stderr}"
    );
}

/// Runs `tests/node/mcp-client.mjs` with `options`; returns what it printed.
fn node_client(options: Value) -> Value {
    node_script("mcp-client.mjs", &options)
}

/// Runs the Node script `tests/node/SCRIPT` with `options` as its one argument; returns the
/// JSON it printed.
fn node_script(script: &str, options: &Value) -> Value {
    let modules = node_modules();
    let out = Command::new("node")
        .arg(modules.parent().unwrap().join(script))
        .arg(options.to_string())
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{script} failed: {stdout}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// What the TypeScript SDK's client sees of a run: text, canonical value, error flag.
fn seen_run(text: &str, result: Value) -> Value {
    json!({"text": text, "structured": {"status": "ok", "result": result, "logs": [], "calls": []}, "isError": false})
}

#[test]
fn the_typescript_sdk_client_lists_calls_and_cancels_over_stdio_and_http() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(&["--tools", &manifest()]);
    for (transport, target) in [
        ("stdio", json!([BIN, "mcp", "--tools", manifest()])),
        ("http", json!(server.url)),
    ] {
        let pidfile = dir.path().join(format!("{transport}.pid"));
        let seen = node_client(json!({transport: target, "pidfile": pidfile}));
        assert_eq!(
            seen["tools"],
            json!([
                "run_code",
                "read_spill",
                "run_code_resume",
                "job_output",
                "job_kill",
                "job_list"
            ]),
            "{transport}"
        );
        assert_eq!(
            seen["answer"],
            seen_run("result: 42", json!(42)),
            "{transport}"
        );
        assert_eq!(
            seen["cancelled"],
            json!({"rejected": "McpError: MCP error -32001: the test cancels the run"}),
            "{transport}"
        );
        assert_eq!(seen["sleepKilled"], true, "{transport}");
        assert_eq!(
            seen["after"],
            seen_run("result: \"still here\"", json!("still here")),
            "{transport}"
        );
    }
}

#[test]
fn a_program_longer_than_the_client_s_timeout_is_followed_with_job_output_and_jobs_stay_in_their_session()
 {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(&["--tools", &manifest(), "--yield-after", "300"]);
    let pidfile = dir.path().join("bg.pid");
    let seen = node_client(json!({
        "http": server.url,
        "jobs": {"http": server.url, "pidfile": pidfile},
    }));
    // run_code-1 was the client's first run (`return 6 * 7`): a run that may yield is a
    // job from its start, one that ends in time is then forgotten.
    let id = "run_code-2";
    assert_eq!(
        seen["first"]["structured"],
        json!({"status": "running", "job_id": id, "output": "step 1\n"}),
        "{seen}"
    );
    assert_eq!(
        seen["first"]["isError"], false,
        "a run going on is no error"
    );
    assert_eq!(
        seen["first"]["text"],
        format!(
            "step 1\nstill running as background job {id}; read what follows with job_output {{\"job_id\": \"{id}\", \"wait_ms\": 10000}}, stop it with job_kill"
        )
    );
    assert_eq!(seen["output"], "step 2\n", "{seen}");
    assert_eq!(seen["last"]["status"], "finished");
    assert_eq!(seen["last"]["value"]["result"], "long done");
    assert_eq!(
        seen["last"]["value"]["logs"],
        json!([{"level": "log", "text": "step 1"}, {"level": "log", "text": "step 2"}])
    );
    let unknown = json!({"isError": true, "text": format!("no background job \"{id}\" (job_list lists yours)")});
    assert_eq!(seen["strangerReads"], unknown);
    assert_eq!(seen["strangerKills"], unknown);
    assert_eq!(
        seen["background"],
        json!({"kind": "background", "job_id": "run_code-3", "isError": false})
    );
    assert_eq!(seen["sleepKilledWithSession"], true);
}

#[test]
fn a_program_calls_an_upstream_mcp_server_through_codemode_mcp() {
    let everything = node_modules().join(".bin/mcp-server-everything");
    let upstream = format!("everything={}", everything.display());
    let server = HttpServer::start(&["--mcp", &upstream]);
    for (transport, target) in [
        ("stdio", json!([BIN, "mcp", "--mcp", upstream])),
        ("http", json!(server.url)),
    ] {
        let seen = node_client(json!({transport: target, "upstream": true}));
        assert_eq!(
            seen["echo"]["structured"]["result"], "Echo: hi",
            "{transport}: {seen}"
        );
        assert_eq!(seen["echo"]["isError"], false, "{transport}");
    }
}

#[test]
fn progress_of_the_calls_a_run_makes_reaches_the_client_that_asked_for_it() {
    // Over stdio: over HTTP, once in a loaded full run, the client saw fewer reports (not
    // yet explained; see the README's progress bullet).
    let script = node_modules().parent().unwrap().join("test-server.mjs");
    let upstream = format!("t=node {}", script.display());
    let seen = node_client(json!({"stdio": [BIN, "mcp", "--mcp", upstream], "progress": true}));
    assert_eq!(seen["steps"]["structured"]["result"], "done", "{seen}");
    // Numbered 1, 2, 3… across both calls (each with its own scale), each naming the
    // reporting tool with its own figures, in order; none after the answer.
    assert_eq!(
        seen["progress"],
        json!([
            {"progress": 1, "message": "t.steps 1/2 step 1"},
            {"progress": 2, "message": "t.steps 2/2 step 2"},
            {"progress": 3, "message": "t.steps 1/3 step 1"},
            {"progress": 4, "message": "t.steps 2/3 step 2"},
            {"progress": 5, "message": "t.steps 3/3 step 3"},
        ])
    );
}

/// The conformance suite's server scenarios that apply to a server offering tools but no
/// resources, prompts, completions, logging or sampling (see the README).
const CONFORMANCE: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "server-sse-multiple-streams",
    "server-sse-polling",
    "dns-rebinding-protection",
];

#[test]
fn the_conformance_scenarios_that_apply_pass() {
    let modules = node_modules();
    let server = HttpServer::start(&[]);
    let results = tempfile::tempdir().unwrap();
    for scenario in CONFORMANCE {
        let out = Command::new("node")
            .arg(modules.join("@modelcontextprotocol/conformance/dist/index.js"))
            .args(["server", "--url", &server.url, "--scenario", scenario])
            .arg("--output-dir")
            .arg(results.path())
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains(" 0 failed"),
            "{scenario}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[tokio::test]
async fn the_readme_s_client_configuration_starts_the_server() {
    let readme = std::fs::read_to_string(repo("README.md")).unwrap();
    let section = readme
        .split_once("### Serving MCP (`codemode mcp`)")
        .unwrap()
        .1;
    let json = section
        .split_once("```json\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .unwrap()
        .0;
    let config: Value = serde_json::from_str(json).unwrap();
    let server = &config["mcpServers"]["codemode"];
    assert_eq!(server["command"], "codemode");
    let args: Vec<String> = server["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().replace("/path/to/project", &repo(".")))
        .collect();
    assert_eq!(args[0], "mcp");
    let client = stdio(&args[1..].iter().map(String::as_str).collect::<Vec<_>>()).await;
    let r = run(
        &client,
        "return (await tools.read_file({path: 'README.md', limit: 1})).content",
    )
    .await;
    assert_eq!(text(&r), "result: \"# codemode\\n\"");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_embedder_serves_its_own_registry_and_the_session_s_context_follows_each_call() {
    use codemode::mcp::server::{McpServer, McpServerConfig};
    use codemode::{Exec, Registry};

    let registry = Registry::new();
    let _note = registry
        .register(
            crate::support::test_tool("note").execute(|_args, exec: Exec| async move {
                let _ = exec.agent().inject("the build is green", "note");
                Ok(json!("noted"))
            }),
        )
        .unwrap();
    let server = McpServer::new(
        registry.clone(),
        McpServerConfig::default().expose_tools(true),
    )
    .unwrap();
    // The server registered its run_code in the embedder's registry; a second server
    // over the same registry cannot.
    assert!(registry.names().contains(&"run_code".to_owned()));
    let second = McpServer::new(registry.clone(), McpServerConfig::default()).unwrap_err();
    assert_eq!(
        second.to_string(),
        "the MCP server registers its own run_code: a tool named `run_code` is already registered; dispose its handle first to replace it"
    );

    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (reader, writer) = tokio::io::split(server_end);
    let serving = tokio::spawn(async move { server.serve_io(reader, writer).await });
    let client: Client = ().serve(tokio::io::split(client_end)).await.unwrap();
    let r = call(&client, "note", json!({})).await;
    assert_eq!(text(&r), "noted\nthe build is green");
    // Taken once: the next call carries only its own content.
    let r = run(&client, "return await tools.note({})").await;
    assert_eq!(text(&r), "result: \"noted\"\nthe build is green");
    let r = run(&client, "return 1").await;
    assert_eq!(text(&r), "result: 1");
    client.cancel().await.unwrap();
    serving.await.unwrap().unwrap();
    assert!(
        !registry.names().contains(&"run_code".to_owned()),
        "run_code goes with the server"
    );
}

/// A client that counts the server's `notifications/tools/list_changed`.
#[derive(Clone, Default)]
struct ListWatcher {
    changes: std::sync::Arc<tokio::sync::Notify>,
    count: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl rmcp::ClientHandler for ListWatcher {
    async fn on_tool_list_changed(&self, _context: rmcp::service::NotificationContext<RoleClient>) {
        self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.changes.notify_one();
    }
}

#[tokio::test]
async fn the_client_hears_when_the_tools_change_and_sees_the_new_declarations() {
    use codemode::Registry;
    use codemode::mcp::server::{McpServer, McpServerConfig};

    let registry = Registry::new();
    let server = McpServer::new(registry.clone(), McpServerConfig::default()).unwrap();
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (reader, writer) = tokio::io::split(server_end);
    let serving = tokio::spawn(async move { server.serve_io(reader, writer).await });
    let watcher = ListWatcher::default();
    let client = watcher
        .clone()
        .serve(tokio::io::split(client_end))
        .await
        .unwrap();
    let capabilities = client.peer().peer_info().unwrap().capabilities.clone();
    assert_eq!(capabilities.tools.and_then(|t| t.list_changed), Some(true));
    let description = |tools: Vec<rmcp::model::Tool>| {
        tools
            .iter()
            .find(|t| t.name == "run_code")
            .and_then(|t| t.description.clone())
            .unwrap()
            .to_string()
    };
    let before = description(client.peer().list_all_tools().await.unwrap());
    assert!(!before.contains("weather"), "{before}");

    // A new tool: one notification, and run_code now declares it.
    let handle = registry
        .register(crate::support::test_tool("weather").returns(json!("sunny")))
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), watcher.changes.notified())
        .await
        .expect("no notifications/tools/list_changed");
    let after = description(client.peer().list_all_tools().await.unwrap());
    assert!(after.contains("weather"), "{after}");
    let ran = client
        .peer()
        .call_tool(
            CallToolRequestParams::new("run_code")
                .with_arguments(object(json!({"code": "return await tools.weather({})"}))),
        )
        .await
        .unwrap();
    assert_eq!(text(&ran), "result: \"sunny\"");

    // Gone again: another notification.
    drop(handle);
    tokio::time::timeout(Duration::from_secs(10), watcher.changes.notified())
        .await
        .expect("no notifications/tools/list_changed");
    assert_eq!(watcher.count.load(std::sync::atomic::Ordering::SeqCst), 2);
    client.cancel().await.unwrap();
    serving.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_session_runs_at_most_its_share_of_calls_at_once_and_the_rest_wait() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use codemode::Registry;
    use codemode::mcp::server::{McpServer, McpServerConfig};

    let registry = Registry::new();
    let (running, most) = (
        std::sync::Arc::new(AtomicUsize::new(0)),
        std::sync::Arc::new(AtomicUsize::new(0)),
    );
    let (r, m) = (running.clone(), most.clone());
    let _hold = registry
        .register(
            crate::support::test_tool("hold").execute(move |_args, _exec| {
                let (r, m) = (r.clone(), m.clone());
                async move {
                    let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                    m.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    r.fetch_sub(1, Ordering::SeqCst);
                    Ok(json!("held"))
                }
            }),
        )
        .unwrap();
    let server = McpServer::new(
        registry.clone(),
        McpServerConfig::default()
            .expose_tools(true)
            .max_calls_per_session(2),
    )
    .unwrap();
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (reader, writer) = tokio::io::split(server_end);
    let serving = tokio::spawn(async move { server.serve_io(reader, writer).await });
    let client: Client = ().serve(tokio::io::split(client_end)).await.unwrap();
    let calls = (0..6).map(|_| call(&client, "hold", json!({})));
    let results = futures::future::join_all(calls).await;
    assert!(results.iter().all(|r| text(r) == "held"));
    assert_eq!(most.load(Ordering::SeqCst), 2);
    client.cancel().await.unwrap();
    serving.await.unwrap().unwrap();
}

/// Runs `tests/node/mcp-approval.mjs` against `codemode mcp --ask` over `root` with
/// `program`, the client answering approvals with `elicit` (or without elicitation).
fn approval_client(root: &Path, program: &str, elicit: Option<&str>) -> Value {
    approval_client_with(root, json!({"code": program, "elicit": elicit}))
}

/// [`approval_client`] with the script's options `options` (besides `stdio`).
fn approval_client_with(root: &Path, mut options: Value) -> Value {
    let paused = root.join("paused");
    options["stdio"] = json!([BIN, "mcp", "--root", root, "--ask", "--paused-dir", paused]);
    node_script("mcp-approval.mjs", &options)
}

#[test]
fn an_ask_is_put_to_the_user_by_elicitation_or_pauses_for_run_code_resume() {
    let program =
        "const r = await tools.write_file({path: 'a.txt', content: 'hi'}); return r.bytes";
    let prompt = "write_file is not allowed by --allow write";

    // The client can elicit and accepts: the program simply goes on.
    let dir = tempfile::tempdir().unwrap();
    let seen = approval_client(dir.path(), program, Some("accept"));
    assert_eq!(seen["first"]["structured"]["status"], "ok", "{seen:#}");
    assert_eq!(seen["first"]["structured"]["result"], 2);
    assert_eq!(seen["asked"].as_array().unwrap().len(), 1);
    let message = seen["asked"][0].as_str().unwrap();
    assert!(message.starts_with(prompt), "{message}");
    assert!(
        message.contains("write_file with {\"path\":\"a.txt\",\"content\":\"hi\"}"),
        "{message}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "hi"
    );
    assert!(seen.get("resumed").is_none());

    // It declines: the program sees the denial.
    let dir = tempfile::tempdir().unwrap();
    let seen = approval_client(dir.path(), program, Some("decline"));
    assert_eq!(seen["first"]["isError"], true, "{seen:#}");
    assert_eq!(
        seen["first"]["structured"]["error"]["message"],
        "write_file: the user declined the call"
    );
    assert!(!dir.path().join("a.txt").exists());

    // It cannot elicit: the run pauses, and run_code_resume continues it.
    let dir = tempfile::tempdir().unwrap();
    let seen = approval_client(dir.path(), program, None);
    assert_eq!(seen["first"]["structured"]["status"], "paused", "{seen:#}");
    assert_eq!(seen["first"]["isError"], false);
    assert_eq!(
        seen["first"]["structured"]["paused"]["approvals"][0]["prompt"],
        prompt
    );
    assert_eq!(
        seen["first"]["structured"]["calls"][0]["status"], "paused",
        "nothing ran before the decision"
    );
    assert_eq!(seen["resumed"]["structured"]["status"], "ok", "{seen:#}");
    assert_eq!(seen["resumed"]["structured"]["result"], 2);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "hi"
    );
    assert!(seen["asked"].as_array().unwrap().is_empty());
}

#[test]
fn a_run_paused_behind_codemode_mcp_resumes_after_the_server_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let program = "return (await tools.write_file({path: 'b.txt', content: 'bye'})).bytes";
    let seen = approval_client_with(dir.path(), json!({"code": program, "noResume": true}));
    let paused = &seen["first"]["structured"]["paused"];
    assert_eq!(paused["approvals"][0]["call"], 1, "{seen:#}");
    // The first server has exited with its session; a new one finds the run on disk.
    let seen = approval_client_with(
        dir.path(),
        json!({"resume": {"id": paused["id"], "decisions": [{"call": 1, "approve": true}]}}),
    );
    assert_eq!(seen["first"]["structured"]["status"], "ok", "{seen:#}");
    assert_eq!(seen["first"]["structured"]["result"], 3);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b.txt")).unwrap(),
        "bye"
    );
}

#[tokio::test]
async fn a_given_timeout_bounds_runs_that_could_go_on_as_jobs() {
    // --yield-after is on (10 s by default): --timeout still ends the run.
    let client = stdio(&["--timeout", "300ms"]).await;
    let r = run(
        &client,
        "await new Promise(r => setTimeout(r, 5000)); return 1",
    )
    .await;
    let value = r.structured_content.clone().unwrap();
    assert_eq!(value["status"], "error", "{value:#}");
    assert_eq!(value["error"]["name"], "TimeoutError");
    assert_eq!(
        value["error"]["message"],
        "the program did not finish within its 300 ms timeout"
    );
    client.cancel().await.unwrap();
}
