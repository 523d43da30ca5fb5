//! The hostile suite: every program under `tests/programs/hostile/` runs through `run_code`
//! and must end in the outcome its snapshot beside it pins (`NAME.js.snap`, an insta
//! snapshot: `cargo insta review` shows and accepts a change), within its deadline plus
//! 100 ms, with the host usable afterwards.
//!
//! A snapshot pins the run's `status`, the error's `name` and `message`, and the `result`;
//! [`pins`] names the programs whose snapshot pins more (the error's position, the calls),
//! whose logs are checked, and which end by their deadline.
//!
//! No outcome depends on the speed of the build or the machine: a program that ends by its
//! deadline never ends otherwise, and every other one runs under a deadline it never
//! comes near.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use codemode::run_code::Limits;
use codemode::{Exec, ToolError};
use serde_json::{Map, Value, json};

use crate::support::{Harness, echo_tool, test_tool};

/// The deadline of the programs that end by it (short, so that the suite stays quick).
const TIMEOUT: Duration = Duration::from_millis(1_000);

/// The deadline of every other program: far longer than the slowest of them takes in a debug
/// build on a loaded machine, so that each ends by itself.
const GENEROUS: Duration = Duration::from_secs(60);

/// The console limit: below the default (64 MiB), so that a program passes it in well under
/// a second in a debug build, and far above what the programs that time out print.
const CONSOLE_LIMIT: u64 = 8 << 20;

fn harness(timeout: Duration) -> Harness {
    let limits = Limits::default()
        .timeout(timeout)
        .memory(32 << 20)
        .max_tool_calls(1_000)
        .max_console_bytes(CONSOLE_LIMIT)
        .cancel_grace(Duration::from_millis(200));
    let mut h = Harness::new(limits);
    h.add(echo_tool());
    h.add(test_tool("fail").execute(|_a, _e| async { Err(ToolError::new("boom")) }));
    h.add(test_tool("sleep").execute(|args, exec: Exec| async move {
        let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(ms)) => Ok(json!("slept")),
            _ = exec.signal().cancelled() => Err(ToolError::cancelled()),
        }
    }));
    h
}

fn programs() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/hostile");
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("js" | "ts")))
        .collect();
    out.sort();
    out
}

/// What a program's snapshot pins beyond its status, error name and message, and result,
/// what its logs must show, and its deadline.
#[derive(Default)]
struct Pins {
    /// The program ends by its deadline ([`TIMEOUT`]; [`GENEROUS`] otherwise).
    times_out: bool,
    /// The error's `line` and `column`.
    position: bool,
    /// The `calls` list: each call's `tool` and `status` (not its `ms`).
    calls: bool,
    /// A text some log line contains.
    logs_contain: Option<&'static str>,
    /// The logs kept hold at most this many bytes of text.
    max_log_bytes: Option<usize>,
}

/// The pins of the program named `file`; [`Pins::default`] for most.
fn pins(file: &str) -> Pins {
    match file {
        "catastrophic_regex.js"
        | "hostile_to_json_on_result.js"
        | "indexof_huge_arraylike.js"
        | "infinite_loop.js"
        | "infinite_loop_try_catch.js"
        | "set_interval_forever.js"
        | "throw_looping_message.js" => Pins {
            times_out: true,
            ..Pins::default()
        },
        "enum_typescript.ts" | "promise_never_settles.js" => Pins {
            position: true,
            ..Pins::default()
        },
        "rejecting_tool_then_deadline.js" => Pins {
            times_out: true,
            calls: true,
            ..Pins::default()
        },
        "unhandled_rejection.js" => Pins {
            calls: true,
            logs_contain: Some("Unhandled promise rejection: [ToolCallError: "),
            ..Pins::default()
        },
        "huge_log_line.js" => Pins {
            logs_contain: Some(" characters dropped …]"),
            ..Pins::default()
        },
        "log_flood.js" => Pins {
            times_out: true,
            logs_contain: Some("lines dropped …]"),
            max_log_bytes: Some(20_000),
            ..Pins::default()
        },
        "console_limit.js" => Pins {
            logs_contain: Some("lines dropped …]"),
            max_log_bytes: Some(20_000),
            ..Pins::default()
        },
        _ => Pins::default(),
    }
}

/// The part of a run's canonical value `pins` puts in the snapshot.
fn pinned(v: &Value, pins: &Pins) -> Value {
    let mut m = Map::new();
    m.insert("status".into(), v["status"].clone());
    if let Some(e) = v.get("error") {
        let mut error = Map::new();
        for key in ["name", "message"] {
            error.insert(key.into(), e[key].clone());
        }
        if pins.position {
            for key in ["line", "column"] {
                if let Some(at) = e.get(key) {
                    error.insert(key.into(), at.clone());
                }
            }
        }
        m.insert("error".into(), Value::Object(error));
    }
    if let Some(r) = v.get("result") {
        m.insert("result".into(), r.clone());
    }
    if pins.calls {
        let calls = v["calls"]
            .as_array()
            .map(|c| {
                c.iter()
                    .map(|c| json!({"tool": c["tool"], "status": c["status"]}))
                    .collect()
            })
            .unwrap_or_default();
        m.insert("calls".into(), Value::Array(calls));
    }
    Value::Object(m)
}

/// What of `pins`' checks on the logs fails for the run `v`.
fn log_failures(v: &Value, pins: &Pins) -> Vec<String> {
    let logs: Vec<&str> = v["logs"]
        .as_array()
        .map(|l| l.iter().filter_map(|e| e["text"].as_str()).collect())
        .unwrap_or_default();
    let mut failures = Vec::new();
    if let Some(want) = pins.logs_contain
        && !logs.iter().any(|t| t.contains(want))
    {
        failures.push(format!("no log line contains {want:?}"));
    }
    if let Some(max) = pins.max_log_bytes {
        let total: usize = logs.iter().map(|t| t.len()).sum();
        if total > max {
            failures.push(format!("logs hold {total} bytes, over {max}"));
        }
    }
    failures
}

#[test]
fn every_hostile_program_ends_as_expected_within_the_deadline() {
    // Timed against the deadline: no CPU-heavy test runs meanwhile.
    let _heavy = crate::support::heavy();
    // On a thread with the stack the default limits ask for, as `codemode run` and `codemode
    // mcp` give their programs (a test thread's 2 MiB would cap the engine's stack).
    std::thread::Builder::new()
        .stack_size(Limits::default().thread_stack())
        .spawn(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(hostile_programs());
        })
        .unwrap()
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
}

async fn hostile_programs() {
    let (quick, patient) = (harness(TIMEOUT), harness(GENEROUS));
    let mut failures = Vec::new();
    let programs = programs();
    assert!(
        programs.len() >= 40,
        "only {} hostile programs",
        programs.len()
    );
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../programs/hostile");
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    for program in &programs {
        let name = program.file_name().unwrap().to_string_lossy().into_owned();
        let code = std::fs::read_to_string(program).unwrap();
        let pins = pins(&name);
        let (h, deadline) = if pins.times_out {
            (&quick, TIMEOUT)
        } else {
            (&patient, GENEROUS)
        };
        let started = Instant::now();
        let actual = h.run(&code).await;
        let took = started.elapsed();
        if took > deadline + Duration::from_millis(100) {
            failures.push(format!(
                "{name}: took {took:?}, over the deadline plus 100 ms"
            ));
        }
        for failure in log_failures(&actual, &pins) {
            failures.push(format!("{name}: {failure}\n{actual:#}"));
        }
        let snapshot = serde_json::to_string_pretty(&pinned(&actual, &pins)).unwrap();
        settings.set_input_file(program);
        // A mismatch panics once insta has shown the diff: the other programs still run.
        let matched = std::panic::catch_unwind(AssertUnwindSafe(|| {
            settings.bind(|| insta::assert_snapshot!(name.as_str(), snapshot));
        }));
        if matched.is_err() {
            failures.push(format!("{name}: the outcome differs from its snapshot"));
        }
        // The host is fine after every one.
        let after = h.run("return 1").await;
        if after["result"] != 1 {
            failures.push(format!("{name}: the next run failed: {after}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
