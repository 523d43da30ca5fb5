//! The hostile suite: every program under `tests/programs/hostile/` runs through `run_code`
//! and must end in the outcome written beside it (`NAME.expect.json`), within the deadline
//! plus 100 ms, with the host usable afterwards.
//!
//! An expectation is a JSON object: `status` (`ok` or `error`), and optionally `error`
//! (`name`, `message`, `line`, `column`), `result`, `logs_contain` (a text some log line contains),
//! `max_log_bytes` (the logs kept stay under it), `calls` (the exact `calls` list, without
//! `ms`). Run with `CODEMODE_UPDATE_EXPECT=1` to write missing expectations from what the
//! programs do (then read every one before committing it).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use codemode::{Exec, Limits, Tool, ToolError};
use serde_json::{Map, Value, json};

use crate::support::{Harness, echo_tool};

/// The deadline every hostile program runs under.
const TIMEOUT: Duration = Duration::from_millis(1_000);

fn harness() -> Harness {
    let limits = Limits::default()
        .timeout(TIMEOUT)
        .memory(32 << 20)
        .max_tool_calls(1_000)
        .cancel_grace(Duration::from_millis(200));
    let mut h = Harness::new(limits);
    h.add(echo_tool());
    h.add(
        Tool::builder("fail")
            .execute(|_a, _e| async { Err(ToolError::new("boom")) })
            .build()
            .unwrap(),
    );
    h.add(
        Tool::builder("sleep")
            .execute(|args, exec: Exec| async move {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(ms)) => Ok(json!("slept")),
                    _ = exec.signal().cancelled() => Err(ToolError::cancelled()),
                }
            })
            .build()
            .unwrap(),
    );
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

/// What of a run's canonical value an expectation pins.
fn observed(v: &Value) -> Value {
    let mut m = Map::new();
    m.insert("status".into(), v["status"].clone());
    if let Some(e) = v.get("error") {
        m.insert(
            "error".into(),
            json!({"name": e["name"], "message": e["message"]}),
        );
    }
    if let Some(r) = v.get("result") {
        m.insert("result".into(), r.clone());
    }
    Value::Object(m)
}

fn check(expect: &Value, actual: &Value) -> Result<(), String> {
    let mismatch = |what: &str| Err(format!("{what}: expected {expect:#}\ngot {actual:#}"));
    if expect["status"] != actual["status"] {
        return mismatch("status");
    }
    if let Some(e) = expect.get("error") {
        for key in ["name", "message", "line", "column"] {
            if let Some(want) = e.get(key)
                && Some(want) != actual["error"].get(key)
            {
                return mismatch(key);
            }
        }
    }
    if let Some(r) = expect.get("result")
        && Some(r) != actual.get("result")
    {
        return mismatch("result");
    }
    let logs: Vec<&str> = actual["logs"]
        .as_array()
        .map(|l| l.iter().filter_map(|e| e["text"].as_str()).collect())
        .unwrap_or_default();
    if let Some(want) = expect.get("logs_contain").and_then(Value::as_str)
        && !logs.iter().any(|t| t.contains(want))
    {
        return mismatch("logs_contain");
    }
    if let Some(max) = expect.get("max_log_bytes").and_then(Value::as_u64) {
        let total: usize = logs.iter().map(|t| t.len()).sum();
        if total as u64 > max {
            return Err(format!("logs hold {total} bytes, over {max}"));
        }
    }
    if let Some(calls) = expect.get("calls") {
        let got: Vec<Value> = actual["calls"]
            .as_array()
            .map(|c| {
                c.iter()
                    .map(|c| json!({"tool": c["tool"], "status": c["status"]}))
                    .collect()
            })
            .unwrap_or_default();
        if &Value::Array(got) != calls {
            return mismatch("calls");
        }
    }
    Ok(())
}

#[test]
fn every_hostile_program_ends_as_expected_within_the_deadline() {
    // Timed against the deadline: no CPU-heavy test runs meanwhile.
    let _heavy = crate::support::heavy();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(hostile_programs());
}

async fn hostile_programs() {
    let h = harness();
    let update = std::env::var_os("CODEMODE_UPDATE_EXPECT").is_some();
    let mut failures = Vec::new();
    let programs = programs();
    assert!(
        programs.len() >= 40,
        "only {} hostile programs",
        programs.len()
    );
    for program in &programs {
        let name = program.file_name().unwrap().to_string_lossy().into_owned();
        let code = std::fs::read_to_string(program).unwrap();
        let started = Instant::now();
        let actual = h.run(&code).await;
        let took = started.elapsed();
        if took > TIMEOUT + Duration::from_millis(100) {
            failures.push(format!(
                "{name}: took {took:?}, over the deadline plus 100 ms"
            ));
        }
        let expect_path = program.with_extension("expect.json");
        let expect: Value = match std::fs::read_to_string(&expect_path) {
            Ok(text) => serde_json::from_str(&text).unwrap(),
            Err(_) if update => {
                let v = observed(&actual);
                std::fs::write(
                    &expect_path,
                    serde_json::to_string_pretty(&v).unwrap() + "\n",
                )
                .unwrap();
                v
            }
            Err(_) => {
                failures.push(format!("{name}: no {}", expect_path.display()));
                continue;
            }
        };
        if let Err(e) = check(&expect, &actual) {
            failures.push(format!("{name}: {e}"));
        }
        // The host is fine after every one.
        let after = h.run("return 1").await;
        if after["result"] != 1 {
            failures.push(format!("{name}: the next run failed: {after}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
