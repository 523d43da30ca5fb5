//! The MCP client: real servers (server-everything, server-filesystem, server-memory, from
//! the pinned lock under tests/node) and the misbehaving cases of `tests/node/test-server.mjs`,
//! through the command line and the library.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use codemode::mcp::{ServerConfig, connect_all};
use codemode::run_code::Limits;
use codemode::{ErrorKind, Registry};
use serde_json::{Value, json};

use crate::support::{Harness, node_modules};

fn bin(name: &str) -> String {
    node_modules().join(".bin").join(name).display().to_string()
}

/// `node tests/node/test-server.mjs ARGS…`
fn test_server(args: &[&str]) -> Vec<String> {
    let script = node_modules().parent().unwrap().join("test-server.mjs");
    let mut words = vec!["node".to_owned(), script.display().to_string()];
    words.extend(args.iter().map(|a| (*a).to_owned()));
    words
}

/// `--mcp NAME=node tests/node/test-server.mjs`.
fn test_flag(name: &str) -> String {
    let words = test_server(&[]);
    format!(
        "{name}={}",
        shlex::try_join(words.iter().map(String::as_str)).unwrap()
    )
}

fn codemode(args: &[&str], dir: &Path) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// `codemode run PROGRAM --mcp-config CONFIG --json` in `dir`.
fn run_with_config(program: &Path, config: &Path, dir: &Path) -> Output {
    codemode(
        &[
            "run",
            program.to_str().unwrap(),
            "--mcp-config",
            config.to_str().unwrap(),
            "--json",
        ],
        dir,
    )
}

fn json_of(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// [`run_with_config`], which must end within 20 s: failures are bounded in time.
fn run_within_20s(program: &Path, config: &Path, dir: &Path) -> Output {
    let started = Instant::now();
    let out = run_with_config(program, config, dir);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    out
}

/// Whether a process with this id is alive (a zombie counts as gone).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn three_real_servers_answer_a_program_with_exact_values() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("files");
    std::fs::create_dir_all(files.join("sub")).unwrap();
    std::fs::write(files.join("a.txt"), "hello fs\n").unwrap();
    let config = json!({"mcpServers": {
        "everything": {"command": bin("mcp-server-everything")},
        "fs": {"command": bin("mcp-server-filesystem"), "args": [files]},
        "memory": {"command": bin("mcp-server-memory"),
                   "env": {"MEMORY_FILE_PATH": dir.path().join("memory.jsonl")}},
    }});
    let config = write(dir.path(), "mcp.json", &config.to_string());
    let files = files.canonicalize().unwrap();
    let program = format!(
        r#"const dir = {dir:?};
const text = await tools["fs.read_text_file"]({{path: dir + "/a.txt"}});
const listing = await tools.fs_list_directory({{path: dir}});
await tools.fs_write_file({{path: dir + "/b.txt", content: "written"}});
const back = await tools.fs_read_text_file({{path: dir + "/b.txt"}});
const [echo, created, sum] = await Promise.all([
  tools.everything_echo({{message: "both"}}),
  tools.memory_create_entities({{entities: [{{name: "Ada", entityType: "person", observations: ["wrote programs"]}}]}}),
  tools["everything.get-sum"]({{a: 2, b: 3}}),
]);
const weather = await tools["everything.get-structured-content"]({{location: "Chicago"}});
const graph = await tools.memory_read_graph({{}});
let refused;
try {{ await tools.fs_read_text_file({{path: "/etc/passwd"}}); }} catch (e) {{ refused = [e.name, e.toolName, e.message.includes("outside allowed directories")]; }}
return {{text, listing, back, echo, created, sum, weather: Object.keys(weather).sort(), graph, refused}};"#,
        dir = files.display().to_string()
    );
    let program = write(dir.path(), "p.js", &program);
    let out = run_with_config(&program, &config, dir.path());
    let value = json_of(&out);
    assert_eq!(value["status"], "ok", "{value}");
    let ada = json!({"name": "Ada", "entityType": "person", "observations": ["wrote programs"]});
    assert_eq!(
        value["result"],
        json!({
            "text": {"content": "hello fs\n"},
            "listing": {"content": "[FILE] a.txt\n[DIR] sub"},
            "back": {"content": "written"},
            "echo": "Echo: both",
            "created": {"entities": [ada]},
            "sum": "The sum of 2 and 3 is 5.",
            "weather": ["conditions", "humidity", "temperature"],
            "graph": {"entities": [ada], "relations": []},
            "refused": ["ToolCallError", "fs.read_text_file", true],
        })
    );
    assert_eq!(
        std::fs::read_to_string(files.join("b.txt")).unwrap(),
        "written"
    );
}

/// A server that exits while a process it started keeps its stdout open: its calls fail
/// soon after the exit (the connection's exit grace, 300 ms), not at their timeout.
#[test]
fn a_server_that_exits_fails_its_calls_even_when_its_stdout_stays_open() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let words = test_server(&["--log", log.to_str().unwrap()]);
    let config = json!({"mcpServers": {"t": {"command": words[0], "args": words[1..], "timeout_ms": 60000}}});
    let config = write(dir.path(), "mcp.json", &config.to_string());
    let program = write(
        dir.path(),
        "p.js",
        r#"const r = {};
try { await tools.t_exit({code: 5, orphan: true}); } catch (e) { r.exit = e.message; }
try { await tools.t_pid(); } catch (e) { r.after = e.message; }
return r;"#,
    );
    // Far below the 60 s call timeout (the rest of the bound is start-up and shutdown).
    let value = json_of(&run_within_20s(&program, &config, dir.path()));
    let status =
        "(the server exited with status 5); stderr: test server ready\nexiting with 5 on request";
    assert_eq!(
        value["result"],
        json!({
            "exit": format!("MCP server \"t\" closed the connection during t.exit {status}"),
            "after": format!("MCP server \"t\" is no longer running; t.pid cannot be called {status}"),
        })
    );
    // The orphan was in the server's process group: it is gone too.
    let noted = std::fs::read_to_string(&log).unwrap();
    let pid: u32 = noted
        .lines()
        .find_map(|line| line.strip_prefix("orphan "))
        .expect("the orphan's pid")
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(pid), "the orphan {pid} is still running");
}

#[test]
fn declarations_group_each_servers_tools_and_list_every_page() {
    let dir = tempfile::tempdir().unwrap();
    let flag = test_flag("t");
    let out = codemode(&["types", "--mcp", &flag], dir.path());
    let types = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{types}");
    // The test server pages its 8 tools two at a time: every page was followed.
    for tool in [
        "slow",
        "exit",
        "steps",
        "add_tool",
        "fail",
        "rpc_error",
        "image",
        "pid",
    ] {
        assert!(
            types.contains(&format!("\"t.{tool}\"")),
            "t.{tool} missing:\n{types}"
        );
        assert!(
            types.contains(&format!("  t_{tool}(args")),
            "alias t_{tool} missing"
        );
    }
    // Each of the three interfaces has the server's heading once, before its tools, after
    // the built-in tools.
    let heading = "  // t.*: the tools of server \"t\"\n";
    assert_eq!(types.matches(heading).count(), 3, "{types}");
    let in_tools = &types[types.find("declare const tools").unwrap()..];
    let h = in_tools.find(heading).unwrap();
    assert!(in_tools.find("read_file(").unwrap() < h);
    assert!(in_tools[h..].starts_with(&format!("{heading}  /** Add a tool. */\n  \"t.add_tool\"")));
    // The output schema came over: `t.pid` resolves to `{pid}`.
    assert!(types.contains("\"t.pid\": {\n    pid: integer;"), "{types}");
}

/// Issue 15, item 3: what an MCP server's schemas bring that the import keeps for display
/// only is said on stderr, listed by `tools --json`, and returned by the library.
#[test]
fn an_mcp_server_s_import_warnings_reach_stderr_tools_json_and_the_library() {
    let dir = tempfile::tempdir().unwrap();
    let words = test_server(&["--odd-schema"]);
    let flag = format!(
        "t={}",
        shlex::try_join(words.iter().map(String::as_str)).unwrap()
    );
    let expected = [
        "input_schema.properties.a.x-widget: `x-widget` is kept for display but not enforced",
        "input_schema.properties.r.format: format \"regex\" is kept for display but not checked (checked: date-time, date, time, uri, email, uuid, ipv4, ipv6, hostname)",
    ];
    let out = codemode(&["tools", "--json", "--mcp", &flag], dir.path());
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said: Vec<String> = expected
        .iter()
        .map(|w| format!("codemode: MCP server \"t\": tool \"t.odd\": {w}\n"))
        .collect();
    assert_eq!(stderr, said.concat());
    let listed = json_of(&out);
    let odd = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "t.odd")
        .unwrap();
    assert_eq!(odd["warnings"], json!(expected));
    // The library: the connection's list.
    runtime().block_on(async {
        let registry = codemode::Registry::new();
        let config = codemode::mcp::ServerConfig::stdio("t", words[0].clone(), words[1..].to_vec());
        let server = codemode::mcp::Connection::connect(config, &registry)
            .await
            .unwrap();
        let listed: Vec<String> = server
            .import_warnings()
            .iter()
            .map(|(tool, w)| format!("{tool}: {w}"))
            .collect();
        let want: Vec<String> = expected.iter().map(|w| format!("t.odd: {w}")).collect();
        assert_eq!(listed, want);
        server.close().await;
    });
}

#[test]
fn results_errors_progress_and_stderr_reach_the_program_and_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let flag = test_flag("t");
    let program = write(
        dir.path(),
        "p.js",
        r#"const r = {};
r.steps = await tools.t_steps({n: 2});
r.image = await tools.t_image({bytes: 10});
r.pid = typeof (await tools["t.pid"]()).pid;
try { await tools.t_fail({message: "it broke"}); } catch (e) { r.fail = [e.name, e.toolName, e.message]; }
try { await tools.t_rpc_error({message: "rpc broke"}); } catch (e) { r.rpc = [e.name, e.message]; }
try { await tools.t_slow({ms: "soon"}); } catch (e) { r.bad = e.message; }
try { await tools.t_bad_output(); } catch (e) { r.bad_output = e.message; }
console.log("from the program");
return r;"#,
    );
    let out = codemode(
        &["run", program.to_str().unwrap(), "--mcp", &flag, "--json"],
        dir.path(),
    );
    let value = json_of(&out);
    assert_eq!(
        value["result"],
        json!({
            "steps": "done",
            "image": [{"type": "image", "mimeType": "image/png", "size": 10}],
            "pid": "number",
            "fail": ["ToolCallError", "t.fail", "it broke"],
            "rpc": ["ToolCallError", "MCP error -32001: rpc broke"],
            "bad": "invalid arguments for t.slow:\nargs.ms: expected integer, got string — ms: integer",
            "bad_output": "tool t.bad_output returned output that does not match its schema:\noutput.pid: expected integer, got string",
        }),
        "{value}"
    );
    // The server's stderr ("test server ready") is kept for errors, never mixed into the
    // program's output; progress goes to the terminal's stderr.
    assert_eq!(
        value["logs"],
        json!([{"level": "log", "text": "from the program"}])
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stdout.contains("test server ready") && !stderr.contains("test server ready"));
    assert!(
        stderr.contains(
            "codemode: progress: t.steps 1/2 step 1\ncodemode: progress: t.steps 2/2 step 2\n"
        ),
        "{stderr}"
    );
}

#[test]
fn a_failing_server_is_named_quickly_and_the_others_keep_working_and_no_process_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    // Each shell writes its pid, then becomes the server (exec), so the pid is the server's.
    let sh = |script: &str| json!({"command": "sh", "args": ["-c", format!("echo $$ >> {}; {script}", pids.display())], "startup_timeout_ms": 1500});
    let config = json!({"mcpServers": {
        "missing": {"command": "/no/such/server"},
        "crashes": sh("echo cannot start >&2; exit 3"),
        "mute": sh("exec sleep 60"),
        "garbage": sh("echo this is not JSON; echo more noise; exec sleep 60"),
        "dies": {"command": "sh", "args": ["-c", format!("echo $$ >> {}; exec {}", pids.display(),
                  shlex::try_join(test_server(&[]).iter().map(String::as_str)).unwrap())]},
        "ok": {"command": "sh", "args": ["-c", format!("echo $$ >> {}; exec {}", pids.display(),
                  shlex::try_join(test_server(&[]).iter().map(String::as_str)).unwrap())]},
    }});
    let config = write(dir.path(), "mcp.json", &config.to_string());
    let program = write(
        dir.path(),
        "p.js",
        r#"const r = {};
const [dies, pending] = await Promise.allSettled([tools.dies_exit({code: 4}), tools.dies_slow({ms: 20000})]);
r.dies = dies.reason.message;
r.pending = pending.reason.message;
try { await tools.dies_pid(); } catch (e) { r.after = e.message; }
r.ok = typeof (await tools.ok_pid()).pid;
try { await tools.mute_pid(); } catch (e) { r.mute = e.message.split(";")[0]; }
return r;"#,
    );
    // Bounded: the start-up limit is 1.5 s, the rest is at once.
    let out = run_within_20s(&program, &config, dir.path());
    let value = json_of(&out);
    let gone = "closed the connection during dies.";
    let status =
        "(the server exited with status 4); stderr: test server ready\nexiting with 4 on request";
    assert_eq!(value["result"]["ok"], "number", "{value}");
    assert_eq!(
        value["result"]["dies"],
        format!("MCP server \"dies\" {gone}exit {status}")
    );
    assert_eq!(
        value["result"]["pending"],
        format!("MCP server \"dies\" {gone}slow {status}")
    );
    assert_eq!(
        value["result"]["after"],
        format!("MCP server \"dies\" is no longer running; dies.pid cannot be called {status}")
    );
    assert!(
        value["result"]["mute"]
            .as_str()
            .unwrap()
            .starts_with("unknown tool \"mute_pid\""),
        "{value}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in [
        "codemode: MCP server \"missing\": could not start `/no/such/server`: No such file or directory (os error 2)\n",
        "codemode: MCP server \"crashes\": the server exited with status 3 during start-up; stderr: cannot start\n",
        "codemode: MCP server \"mute\": did not answer `initialize` within its start-up limit of 1500 ms\n",
        "codemode: MCP server \"garbage\": did not answer `initialize` within its start-up limit of 1500 ms; it printed 2 lines on stdout that are not MCP messages, the first: \"this is not JSON\"\n",
    ] {
        assert!(stderr.contains(line), "missing {line:?} in:\n{stderr}");
    }
    // Every server process that was started is gone once the command has exited.
    let pids: Vec<u32> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 5, "{pids:?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|p| alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<_> = pids.iter().filter(|p| alive(**p)).collect();
    assert!(left.is_empty(), "still running: {left:?}");
}

/// Reads the test server's log until it has `lines` lines (the server writes one when it
/// sees a cancellation), within 10 s.
async fn log_lines(log: &Path, lines: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.lines().count() >= lines || Instant::now() > deadline {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[test]
fn cancelled_and_timed_out_calls_are_cancelled_at_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let words = test_server(&["--log", log.to_str().unwrap()]);
    let mut config = ServerConfig::stdio("t", words[0].clone(), words[1..].to_vec());
    config.call_timeout = Duration::from_millis(300);
    let rt = runtime();
    rt.block_on(async {
        let mut h = Harness::new(Limits::default().timeout(Duration::from_secs(20)));
        let servers = connect_all(vec![config], &h.registry).await;
        let server = servers.into_iter().next().unwrap().unwrap();
        assert_eq!(server.tools().len(), 11);
        // A tool keeps the annotations its server sends; one without has none.
        let slow = h.registry.get("t.slow").unwrap();
        assert_eq!(
            slow.annotations(),
            &codemode::ToolAnnotations {
                read_only_hint: Some(true),
                open_world_hint: Some(false),
                ..Default::default()
            }
        );
        assert!(h.registry.get("t.exit").unwrap().annotations().is_empty());

        // Past the server's call timeout: a timeout error naming server, tool and limit.
        let outcome = h.registry.call("t.slow", json!({"ms": 5000})).await;
        let e = outcome.error_info().unwrap();
        assert_eq!(e.kind(), ErrorKind::Timeout);
        assert_eq!(
            e.message(),
            "MCP server \"t\" did not answer t.slow within its 300 ms call timeout; the call was cancelled; stderr: test server ready"
        );
        // A program that ends with a call in flight: the call is cancelled at the server.
        // (The awaited call's answer comes after the server has the first request.)
        let run = h
            .run("tools.t_slow({ms: 4000}); await tools.t_steps({n: 1}); return 1")
            .await;
        assert_eq!(run["status"], "ok", "{run}");
        // The outer call cancelled: its nested call is cancelled at the server.
        let registry = h.registry.clone();
        let signal = tokio_util::sync::CancellationToken::new();
        let request = codemode::Request::new(
            "run_code",
            json!({"code": "await tools.t_slow({ms: 250}); return 2"}),
            signal.clone(),
        );
        let outer = tokio::spawn(registry.dispatch(request));
        tokio::time::sleep(Duration::from_millis(50)).await;
        signal.cancel();
        let outcome = outer.await.unwrap();
        let run = outcome.value().unwrap();
        assert_eq!(run["error"]["name"], "CancelledError", "{run}");
        assert_eq!(run["calls"][0]["status"], "cancelled", "{run}");
        assert_eq!(
            log_lines(&log, 3).await,
            "cancelled slow 5000\ncancelled slow 4000\ncancelled slow 250\n"
        );
        h.handles.clear();
        drop(server);
    });
}

#[test]
fn calls_time_out_on_time_when_the_server_stops_reading_its_input() {
    let words = test_server(&[]);
    let mut config = ServerConfig::stdio("t", words[0].clone(), words[1..].to_vec());
    config.call_timeout = Duration::from_millis(500);
    let rt = runtime();
    rt.block_on(async {
        let mut h = Harness::new(Limits::default().timeout(Duration::from_secs(30)));
        let servers = connect_all(vec![config], &h.registry).await;
        let server = servers.into_iter().next().unwrap().unwrap();
        // The server stops reading; then a request too large for the pipe cannot be
        // written, and neither can the cancellations the timeouts send.
        let started = Instant::now();
        let run = h
            .run(
                "const deaf = tools.t_slow({ms: 60000, deaf: true}); \
                 await new Promise(r => setTimeout(r, 100)); \
                 const big = tools.t_slow({ms: 1, pad: 'x'.repeat(300000)}); \
                 return (await Promise.allSettled([deaf, big])).map(r => r.reason.message)",
            )
            .await;
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        let timed_out = "MCP server \"t\" did not answer t.slow within its 500 ms call timeout; the call was cancelled; stderr: test server ready";
        assert_eq!(run["result"], json!([timed_out, timed_out]), "{run}");
        h.handles.clear();
        drop(server);
    });
}

#[test]
fn killing_a_background_run_cancels_its_mcp_calls_at_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let words = test_server(&["--log", log.to_str().unwrap()]);
    let config = ServerConfig::stdio("t", words[0].clone(), words[1..].to_vec());
    let rt = runtime();
    rt.block_on(async {
        let mut h = Harness::new(Limits::default());
        h.handles
            .extend(codemode::jobs::register_job_tools(&h.registry).unwrap());
        let servers = connect_all(vec![config], &h.registry).await;
        let server = servers.into_iter().next().unwrap().unwrap();
        let handle = h
            .registry
            .call(
                "run_code",
                json!({"code": "await tools.t_slow({ms: 6000})", "run_in_background": true}),
            )
            .await
            .into_result()
            .unwrap();
        assert_eq!(handle["job_id"], "run_code-1");
        // Time for the program to start and its request to reach the server.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let killed = h
            .registry
            .call("job_kill", json!({"job_id": "run_code-1"}))
            .await
            .into_result()
            .unwrap();
        assert_eq!(killed["status"], "killed");
        assert_eq!(log_lines(&log, 1).await, "cancelled slow 6000\n");
        h.handles.clear();
        drop(server);
    });
}

#[test]
fn a_changed_tool_list_is_swapped_into_the_registry() {
    let words = test_server(&[]);
    let rt = runtime();
    rt.block_on(async {
        let registry = Registry::new();
        let config = ServerConfig::stdio("t", words[0].clone(), words[1..].to_vec());
        let server = connect_all(vec![config], &registry)
            .await
            .pop()
            .unwrap()
            .unwrap();
        assert!(registry.get("t.extra").is_none());
        let added = registry.call("t.add_tool", json!({"name": "extra"})).await;
        assert_eq!(added.value(), Some(&json!("added extra")));
        // The notification arrives on its own: wait for the swap (bounded).
        let deadline = Instant::now() + Duration::from_secs(10);
        while registry.get("t.extra").is_none() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(server.tools().len(), 12, "{:?}", server.tools());
        let outcome = registry.call("t.extra", json!({})).await;
        assert_eq!(outcome.value(), Some(&json!("extra ran")));
        // Dropping the connection unregisters every tool of the server.
        drop(server);
        assert!(registry.names().iter().all(|n| !n.starts_with("t.")));
    });
}

#[test]
fn a_server_over_streamable_http_is_reached_with_its_headers() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let words = test_server(&["--http", "--log", log.to_str().unwrap()]);
    let mut child = std::process::Command::new(&words[0])
        .args(&words[1..])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let url = line.trim().strip_prefix("listening ").unwrap().to_owned();
    let config =
        json!({"mcpServers": {"web": {"url": url, "headers": {"Authorization": "Bearer s3cret"}}}});
    let config = write(dir.path(), "mcp.json", &config.to_string());
    let program = write(
        dir.path(),
        "p.js",
        "const [a, b] = await Promise.all([tools.web_steps({n: 1}), tools.web_image({bytes: 3})]); return [a, b];",
    );
    let out = run_with_config(&program, &config, dir.path());
    let _ = child.kill();
    let _ = child.wait();
    let value = json_of(&out);
    assert_eq!(
        value["result"],
        json!(["done", [{"type": "image", "mimeType": "image/png", "size": 3}]]),
        "{value}"
    );
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.lines().all(|l| l == "authorization Bearer s3cret"),
        "{log}"
    );
}

#[test]
fn bad_flags_and_config_files_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = codemode(&["tools", "--mcp", "a.b=npx x"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the server name \"a.b\" has '.'"));
    let config = write(
        dir.path(),
        "c.json",
        r#"{"mcpServers": {"x": {"comand": "y"}}}"#,
    );
    let out = codemode(
        &["tools", "--mcp-config", config.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "codemode: {}: mcpServers.x.comand: unknown key; a server takes type, command, args, env, cwd, url, headers, timeout_ms, startup_timeout_ms, include_binary, tool_budget, disabled\n",
            config.display()
        )
    );
    // Two servers with one name: a usage error before anything starts.
    let flag = test_flag("t");
    let out = codemode(&["tools", "--mcp", &flag, "--mcp", &flag], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "codemode: two MCP servers are named \"t\" (--mcp and --mcp-config together); give each its own name\n"
    );
    // A server that fails stops the commands that describe the tools (their output would
    // miss its tools); `run` goes on (see the test of failing servers).
    for command in ["types", "tools", "check"] {
        let mut args = vec![command];
        if command == "check" {
            args.push("p.js");
            write(dir.path(), "p.js", "return 1;");
        }
        args.extend(["--mcp", "x=false", "--mcp", &flag]);
        let out = codemode(&args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{command}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "codemode: MCP server \"x\": the server exited with status 1 during start-up\n",
            "{command}"
        );
    }
    // A cwd that does not exist is named as such.
    let config = write(
        dir.path(),
        "d.json",
        r#"{"mcpServers": {"x": {"command": "node", "cwd": "nope"}}}"#,
    );
    let out = codemode(
        &["tools", "--mcp-config", config.to_str().unwrap()],
        dir.path(),
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!(
            "codemode: MCP server \"x\": its folder (cwd) {} is not a folder that exists\n",
            dir.path().join("nope").display()
        )),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_readme_example_reads_this_repository_through_server_filesystem() {
    // As the README runs it, with the pinned server instead of `npx -y`.
    let flag = format!("fs={} .", bin("mcp-server-filesystem"));
    let out = codemode(
        &["run", "examples/mcp_files.ts", "--mcp", &flag, "--json"],
        Path::new(env!("CARGO_MANIFEST_DIR")),
    );
    let value = json_of(&out);
    assert_eq!(value["status"], "ok", "{value}");
    let examples = value["result"]["examples"].as_array().unwrap();
    for file in ["largest_rust_files.ts", "mcp_files.ts", "word_stats.ts"] {
        assert!(examples.contains(&json!(file)), "{value}");
    }
    let sections = value["result"]["readme_sections"].as_array().unwrap();
    assert!(sections.contains(&json!("Command line")), "{value}");
    let log = value["logs"][0]["text"].as_str().unwrap();
    assert!(
        log.starts_with(&format!(
            "codemode {}: {} example programs, ",
            env!("CARGO_PKG_VERSION"),
            examples.len()
        )),
        "{log}"
    );
}

#[test]
fn a_message_past_the_limit_ends_the_connection_at_once_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let program = write(
        dir.path(),
        "p.js",
        "try { await tools.t_huge({bytes: 65 * 1024 * 1024}); } catch (e) { return e.message; }",
    );
    let started = Instant::now();
    let out = codemode(
        &[
            "run",
            program.to_str().unwrap(),
            "--mcp",
            &test_flag("t"),
            "--json",
        ],
        dir.path(),
    );
    // Not the 60 s call timeout.
    assert!(
        started.elapsed() < Duration::from_secs(45),
        "{:?}",
        started.elapsed()
    );
    let value = json_of(&out);
    let message = value["result"].as_str().unwrap();
    // The server then exits (its input closed) or dies of the closed pipe: its exit status
    // and its stderr follow.
    assert!(
        message.starts_with(
            "MCP server \"t\" closed the connection during t.huge (the server exited with status "
        ),
        "{value}"
    );
    assert!(
        message.contains(&format!(
            "; it sent a message longer than {} bytes (the limit), which ended the connection; stderr: test server ready",
            codemode::mcp::MAX_MESSAGE_BYTES
        )),
        "{value}"
    );
}

#[test]
fn a_message_nested_past_the_limit_ends_the_connection_at_once_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    // The message adds 3 levels: the limit fits exactly, one more does not (and
    // serde_json could not read it).
    let fits = codemode::mcp::MAX_MESSAGE_DEPTH - 3;
    let program = write(
        dir.path(),
        "p.js",
        &format!(
            "const fits = await tools.t_deep({{depth: {fits}}}); \
             try {{ await tools.t_deep({{depth: {}}}); }} catch (e) {{ return [fits, e.message]; }}",
            fits + 1
        ),
    );
    let started = Instant::now();
    let out = codemode(
        &[
            "run",
            program.to_str().unwrap(),
            "--mcp",
            &test_flag("t"),
            "--json",
        ],
        dir.path(),
    );
    // Not the 60 s call timeout.
    assert!(
        started.elapsed() < Duration::from_secs(45),
        "{:?}",
        started.elapsed()
    );
    let value = json_of(&out);
    assert_eq!(value["result"][0], "deep", "{value}");
    let message = value["result"][1].as_str().unwrap();
    assert!(
        message.starts_with(
            "MCP server \"t\" closed the connection during t.deep (the server exited with status "
        ),
        "{value}"
    );
    assert!(
        message.contains(&format!(
            "; it sent a message nested deeper than {} levels (the limit), which ended the connection",
            codemode::mcp::MAX_MESSAGE_DEPTH
        )),
        "{value}"
    );
}

#[test]
fn servers_are_shut_down_as_the_specification_asks_when_the_command_ends() {
    // Stdio shutdown (MCP lifecycle): close the server's input, wait, then SIGTERM, wait,
    // then kill. `a` exits when its input closes; `b` stays until SIGTERM.
    let dir = tempfile::tempdir().unwrap();
    let (a_log, b_log) = (dir.path().join("a.log"), dir.path().join("b.log"));
    let flag = |name: &str, args: &[&str]| {
        format!(
            "{name}={}",
            shlex::try_join(test_server(args).iter().map(String::as_str)).unwrap()
        )
    };
    let a = flag("a", &["--log", a_log.to_str().unwrap()]);
    let b = flag("b", &["--log", b_log.to_str().unwrap(), "--stay"]);
    let program = write(
        dir.path(),
        "p.js",
        "return [(await tools.a_pid()).pid, (await tools.b_pid()).pid];",
    );
    let started = Instant::now();
    let out = codemode(
        &[
            "run",
            program.to_str().unwrap(),
            "--mcp",
            &a,
            "--mcp",
            &b,
            "--json",
        ],
        dir.path(),
    );
    let took = started.elapsed();
    let value = json_of(&out);
    assert_eq!(value["status"], "ok", "{value}");
    assert_eq!(std::fs::read_to_string(&a_log).unwrap(), "stdin closed\n");
    assert_eq!(
        std::fs::read_to_string(&b_log).unwrap(),
        "stdin closed\nterminated\n"
    );
    // `b` had its grace period before SIGTERM.
    assert!(took >= codemode::mcp::CLOSE_GRACE, "{took:?}");
    for pid in value["result"].as_array().unwrap() {
        let pid = pid.as_u64().unwrap() as u32;
        assert!(!alive(pid), "the server {pid} outlived codemode");
    }
}

#[test]
fn a_signal_stops_the_run_and_every_server_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let script = format!(
        "echo $$ >> {}; exec {}",
        pids.display(),
        shlex::try_join(test_server(&[]).iter().map(String::as_str)).unwrap()
    );
    let server = format!("t=sh -c {}", shlex::try_quote(&script).unwrap());
    let program = write(dir.path(), "p.js", "await tools.t_slow({ms: 30000});");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["run", program.to_str().unwrap(), "--mcp", &server])
        .current_dir(dir.path())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once the server has started (its pid is written), stop codemode.
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&pids)
        .unwrap_or_default()
        .is_empty()
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid: u32 = std::fs::read_to_string(&pids)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The call is in flight when the signal comes (the server answers after 30 s).
    std::thread::sleep(Duration::from_millis(500));
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "codemode: stopped by a signal\n"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(pid), "the server {pid} outlived codemode");
}

#[test]
fn a_server_past_its_tool_budget_is_listed_by_name_and_described_on_demand() {
    let dir = tempfile::tempdir().unwrap();
    // The budget is read from a config file.
    let config = json!({"mcpServers": {
        "memory": {"command": bin("mcp-server-memory"), "tool_budget": 100,
                   "env": {"MEMORY_FILE_PATH": dir.path().join("memory.jsonl")}},
        "t": {"command": test_server(&[])[0], "args": test_server(&[])[1..]},
    }});
    let path = write(dir.path(), "mcp.json", &config.to_string());
    let servers = codemode::mcp::load_config(&path).unwrap();
    assert_eq!(
        servers.iter().map(|s| s.tool_budget).collect::<Vec<_>>(),
        [Some(100), None]
    );
    let bad = write(
        dir.path(),
        "bad.json",
        r#"{"mcpServers": {"m": {"command": "x", "tool_budget": -1}}}"#,
    );
    let err = codemode::mcp::load_config(&bad).unwrap_err().to_string();
    assert!(
        err.contains("tool_budget") && err.contains("expected a number of tokens"),
        "{err}"
    );

    runtime().block_on(async {
        let registry = codemode::Registry::new();
        let _run_code = registry
            .register(codemode::run_code::run_code_tool(Default::default()))
            .unwrap();
        let mut connections = Vec::new();
        for server in servers {
            connections.push(codemode::mcp::Connection::connect(server, &registry).await.unwrap());
        }
        let memory = registry.get("memory.create_entities").unwrap();
        assert!(memory.is_deferred());
        assert!(!registry.get("t.steps").unwrap().is_deferred());
        let text = registry.get("run_code").unwrap().description_in(&registry);
        // t's tools are declared; memory's 9 are listed after them.
        assert!(text.contains("interface ToolArgsMap"), "{text}");
        assert!(text.contains("\"t.steps\":"), "{text}");
        assert!(!text.contains("\"memory.create_entities\":"), "{text}");
        assert!(
            text.contains("9 more tools are listed by name only.")
                && text.contains("memory (MCP server):\n- memory.add_observations: Add new observations to existing entities in the knowledge graph\n"),
            "{text}"
        );
        // A deferred tool is described on demand and called as any other.
        let v = registry
            .call(
                "run_code",
                json!({"code": r#"
                    const d = await tools.$describe("memory.create_entities");
                    const made = await tools.memory_create_entities({entities: [{name: "Ada", entityType: "person", observations: []}]});
                    return {declared: d.includes('"memory.create_entities": { entities: Entity[] }'), made: made.entities[0].name};
                "#}),
            )
            .await
            .into_result()
            .unwrap();
        assert_eq!(v["result"], json!({"declared": true, "made": "Ada"}), "{v}");
        for c in connections {
            c.close().await;
        }
    });
}
