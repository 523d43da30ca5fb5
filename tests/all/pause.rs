//! Pause on `ask`, resume by replay (issue 20): a run whose call needs approval pauses;
//! `run_code_resume` runs the program again against its journal, so no call runs twice,
//! and a program that does something else on replay is stopped with nothing executed.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use codemode::hooks::{Decision, HookHandle, PreExecute};
use codemode::run_code::{
    FilePausedRuns, Limits, MemoryPausedRuns, PausedRun, PausedRuns, RUN_CODE_RESUME,
    RunCodeConfig, run_code_resume_tool, run_code_tool,
};
use codemode::{Exec, Registry, ToolHandle};
use serde_json::{Value, json};

use crate::support::test_tool;

/// A registry with `run_code`, `run_code_resume`, a tool `step` and a tool `write` whose
/// calls a policy asks about, each counting how often it really ran.
struct Pausing {
    registry: Registry,
    handles: Vec<ToolHandle>,
    _policy: HookHandle,
    steps: Arc<AtomicUsize>,
    writes: Arc<AtomicUsize>,
}

impl Pausing {
    fn new() -> Pausing {
        Pausing::with(RunCodeConfig::default())
    }

    fn with(config: RunCodeConfig) -> Pausing {
        let config = config
            .spill(None)
            .limits(Limits::default().timeout(Duration::from_secs(20)));
        let registry = Registry::new();
        let mut handles = vec![
            registry.register(run_code_tool(config.clone())).unwrap(),
            registry.register(run_code_resume_tool(config)).unwrap(),
        ];
        let (steps, writes) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let s = steps.clone();
        handles.push(
            registry
                .register(test_tool("step").execute(move |args, _e| {
                    let n = s.fetch_add(1, Ordering::SeqCst) + 1;
                    async move {
                        Ok(json!({"i": args.get("i").cloned().unwrap_or(Value::Null), "ran": n}))
                    }
                }))
                .unwrap(),
        );
        let w = writes.clone();
        handles.push(
            registry
                .register(test_tool("write").execute(move |args, _e| {
                    w.fetch_add(1, Ordering::SeqCst);
                    let text = args.str("text").unwrap_or_default().to_owned();
                    async move { Ok(json!(format!("wrote {text}"))) }
                }))
                .unwrap(),
        );
        handles.push(
            registry
                .register(test_tool("big").execute(|args, _e| {
                    let n = args.get("n").and_then(Value::as_u64).unwrap_or(0) as usize;
                    async move { Ok(json!("x".repeat(n))) }
                }))
                .unwrap(),
        );
        let policy = registry.pre_execute(|exec: &Exec| {
            if exec.name() == "write" {
                Decision::Ask(format!(
                    "write {} to the disk?",
                    exec.arguments().str("text").unwrap_or_default()
                ))
            } else {
                Decision::Allow
            }
        });
        Pausing {
            registry,
            handles,
            _policy: policy,
            steps,
            writes,
        }
    }

    async fn run(&self, code: &str) -> Value {
        self.registry
            .call("run_code", json!({"code": code}))
            .await
            .into_result()
            .expect("run_code answers")
    }

    async fn resume(&self, id: &Value, decisions: Value) -> Result<Value, String> {
        self.registry
            .call(RUN_CODE_RESUME, json!({"id": id, "decisions": decisions}))
            .await
            .into_result()
            .map_err(|e| e.message().to_owned())
    }

    /// Resumes the paused run `v` approving call `call` alone.
    async fn approve(&self, v: &Value, call: u64) -> Result<Value, String> {
        self.resume(&v["paused"]["id"], json!([{"call": call, "approve": true}]))
            .await
    }

    fn counts(&self) -> (usize, usize) {
        (
            self.steps.load(Ordering::SeqCst),
            self.writes.load(Ordering::SeqCst),
        )
    }
}

const THREE_CALLS: &str = "const a = await tools.step({i: 1});
const b = await tools.write({text: 'x' + a.i});
const c = await tools.step({i: 2});
console.log('done');
return [a.i, b, c.i, c.ran];";

#[tokio::test]
async fn a_call_that_needs_approval_pauses_the_run_and_an_approval_runs_it_once() {
    let p = Pausing::new();
    let v = p.run(THREE_CALLS).await;
    assert_eq!(v["status"], "paused", "{v:#}");
    let paused = &v["paused"];
    assert_eq!(paused["approvals"].as_array().unwrap().len(), 1);
    let approval = &paused["approvals"][0];
    assert_eq!(approval["call"], 2);
    assert_eq!(approval["tool"], "write");
    assert_eq!(approval["arguments"], json!({"text": "x1"}));
    assert_eq!(approval["prompt"], "write x1 to the disk?");
    assert_eq!(approval["card"]["card"], "generic");
    assert_eq!(
        v["calls"],
        json!([{"tool": "step", "status": "ok", "ms": v["calls"][0]["ms"]},
               {"tool": "write", "status": "paused", "ms": v["calls"][1]["ms"]}])
    );
    assert!(v.get("result").is_none());
    assert_eq!(p.counts(), (1, 0), "nothing ran after the pause");

    let done = p
        .resume(&paused["id"], json!([{"call": 2, "approve": true}]))
        .await
        .unwrap();
    assert_eq!(done["status"], "ok", "{done:#}");
    // `ran` 2: the first step was not run again.
    assert_eq!(done["result"], json!([1, "wrote x1", 2, 2]));
    assert_eq!(done["logs"], json!([{"level": "log", "text": "done"}]));
    assert_eq!(p.counts(), (2, 1), "three executions in all");
    let statuses: Vec<&str> = done["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["ok", "ok", "ok"]);

    // An id resumes once.
    let again = p
        .resume(&paused["id"], json!([{"call": 2, "approve": true}]))
        .await
        .unwrap_err();
    assert!(again.contains("there is no paused run"), "{again}");
    assert_eq!(p.counts(), (2, 1));
}

/// A rejection the program has not handled when it pauses is reported once, when the run
/// ends, and not at all when the program handles it after the resume (found by a hostile
/// review: the pause reported it, and the resumed run reported it again).
#[tokio::test]
async fn a_rejection_is_reported_when_the_run_ends_not_when_it_pauses() {
    let p = Pausing::new();
    for (handled, logs) in [
        (
            "",
            json!([{"level": "error", "text": "Unhandled promise rejection: 'left'"}]),
        ),
        ("await left.catch(() => {});", json!([])),
    ] {
        let v = p
            .run(&format!(
                "const left = Promise.reject('left');\nawait tools.write({{text: 'x'}});\n{handled}\nreturn 1"
            ))
            .await;
        assert_eq!(v["status"], "paused", "{v:#}");
        assert!(v.get("logs").is_none_or(|l| l == &json!([])), "{v:#}");
        let done = p.approve(&v, 1).await.unwrap();
        assert_eq!(done["result"], 1, "{done:#}");
        assert_eq!(done["logs"], logs, "{done:#}");
    }
}

#[tokio::test]
async fn a_denied_call_rejects_with_a_tool_call_error_the_program_can_handle() {
    let p = Pausing::new();
    let v = p
        .run("const a = await tools.step({i: 1});
try { await tools.write({text: 'x'}); return 'written' }
catch (e) { return {tce: e instanceof ToolCallError, tool: e.toolName, message: e.message, next: (await tools.step({i: 2})).i} }")
        .await;
    assert_eq!(v["status"], "paused");
    let done = p
        .resume(
            &v["paused"]["id"],
            json!([{"call": 2, "approve": false, "reason": "not on a Friday"}]),
        )
        .await
        .unwrap();
    assert_eq!(
        done["result"],
        json!({"tce": true, "tool": "write", "message": "the call was denied by the person asked to approve it: not on a Friday", "next": 2})
    );
    assert_eq!(p.counts(), (2, 0));
    assert_eq!(done["calls"][1]["status"], "error");
}

#[tokio::test]
async fn calls_that_wait_together_are_reported_together() {
    let p = Pausing::new();
    let v = p
        .run("const r = await Promise.all([1, 2, 3, 4, 5].map(i => i % 2 === 0 ? tools.write({text: String(i)}) : tools.step({i})));
return r.map(x => typeof x === 'string' ? x : x.i);")
        .await;
    assert_eq!(v["status"], "paused", "{v:#}");
    let calls: Vec<u64> = v["paused"]["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["call"].as_u64().unwrap())
        .collect();
    assert_eq!(calls, [2, 4]);
    // The other three ran (they were in flight when the run paused) and are not run again.
    assert_eq!(p.counts(), (3, 0));
    let missing = p.approve(&v, 2).await.unwrap_err();
    assert_eq!(
        missing,
        "call 4 (write) has no decision; the run waits on call(s) 2, 4"
    );
    let done = p
        .resume(
            &v["paused"]["id"],
            json!([{"call": 2, "approve": true}, {"call": 4, "approve": true}]),
        )
        .await
        .unwrap();
    assert_eq!(done["result"], json!([1, "wrote 2", 3, "wrote 4", 5]));
    assert_eq!(p.counts(), (3, 2));
}

#[tokio::test]
async fn a_pause_in_a_loop_resumes_ten_times() {
    let p = Pausing::new();
    let mut v = p
        .run(
            "const out = [];
for (let i = 0; i < 10; i++) {
  const s = await tools.step({i});
  out.push(await tools.write({text: `${s.i}:${Math.floor(Math.random() * 1000)}`}));
}
return out.length;",
        )
        .await;
    let mut resumes = 0;
    while v["status"] == "paused" {
        let approvals = v["paused"]["approvals"].as_array().unwrap();
        assert_eq!(approvals.len(), 1);
        assert_eq!(approvals[0]["call"], 2 * (resumes + 1));
        v = p
            .resume(
                &v["paused"]["id"],
                json!([{"call": approvals[0]["call"], "approve": true}]),
            )
            .await
            .unwrap();
        resumes += 1;
    }
    assert_eq!(v["status"], "ok", "{v:#}");
    assert_eq!(v["result"], 10);
    assert_eq!(resumes, 10);
    assert_eq!(p.counts(), (10, 10), "each call ran exactly once");
}

#[tokio::test]
async fn the_clock_random_numbers_timers_and_globals_replay_so_nothing_diverges() {
    let p = Pausing::new();
    let program = "globalThis.seen = (globalThis.seen ?? 0) + 1;
const order = [];
setTimeout(() => order.push('b'), 5);
setTimeout(() => order.push('a'), 1);
const first = await tools.step({i: 1});
await new Promise(r => setTimeout(r, 20));
const facts = {seen: globalThis.seen, order: order.join(''), r: Math.random(), now: Date.now(),
  date: new Date().getTime(), text: Date().length > 0, perf: performance.now() >= 0, ran: first.ran};
await tools.write({text: JSON.stringify(facts)});
return facts;";
    let v = p.run(program).await;
    assert_eq!(v["status"], "paused", "{v:#}");
    let asked: Value = serde_json::from_str(
        v["paused"]["approvals"][0]["arguments"]["text"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(asked["seen"], 1);
    assert_eq!(asked["order"], "ab");
    tokio::time::sleep(Duration::from_millis(30)).await;
    let done = p.approve(&v, 2).await.unwrap();
    assert_eq!(done["status"], "ok", "{done:#}");
    // The same program, fresh engine: the same values, though time went on.
    assert_eq!(done["result"], asked);
    assert_eq!(p.counts(), (1, 1));
}

#[tokio::test]
async fn a_changed_recorded_result_makes_the_program_diverge_and_nothing_runs() {
    /// A store that changes the first call's recorded result, as a host's store gone wrong
    /// might.
    #[derive(Debug, Default)]
    struct Tampering(MemoryPausedRuns);
    impl PausedRuns for Tampering {
        fn put(&self, run: PausedRun) -> Result<(), String> {
            let mut json = serde_json::to_value(&run).unwrap();
            json["journal"]["calls"][0]["outcome"]["value"]["i"] = json!(7);
            self.0.put(serde_json::from_value(json).unwrap())
        }
        fn take(&self, id: &str) -> Result<Option<PausedRun>, String> {
            self.0.take(id)
        }
    }
    let p =
        Pausing::with(RunCodeConfig::default().paused_runs(Some(Arc::new(Tampering::default()))));
    let v = p.run(THREE_CALLS).await;
    assert_eq!(v["status"], "paused");
    let error = p.approve(&v, 2).await.unwrap_err();
    assert_eq!(
        error,
        "the resumed program did not do what it did before it paused, so it was stopped and nothing more ran: call 2: the program called tools.write with other arguments than the recorded run: at /text it passed \"x7\" where the recorded run passed \"x1\"; the paused run is kept"
    );
    assert_eq!(p.counts(), (1, 0));
    // Kept: a second attempt finds it (and diverges the same way: the journal is the same).
    let again = p.approve(&v, 2).await.unwrap_err();
    assert_eq!(again, error);
    assert_eq!(p.counts(), (1, 0));
}

#[tokio::test]
async fn a_tool_whose_answer_changed_is_not_asked_again_on_replay() {
    let p = Pausing::new();
    let v = p.run(THREE_CALLS).await;
    // `step` would answer `ran: 2` now; the replay gives the recorded answer.
    let done = p.approve(&v, 2).await.unwrap();
    assert_eq!(done["result"][1], "wrote x1");
    assert_eq!(p.counts(), (2, 1));
}

#[tokio::test]
async fn a_changed_tool_set_is_refused_and_the_run_kept() {
    let mut p = Pausing::new();
    let v = p.run(THREE_CALLS).await;
    let extra = p
        .registry
        .register(test_tool("extra").returns(json!(1)))
        .unwrap();
    let error = p.approve(&v, 2).await.unwrap_err();
    assert_eq!(
        error,
        "the run cannot resume, because the tools changed since it paused: tool extra is new"
    );
    assert_eq!(p.counts(), (1, 0));
    drop(extra);
    let done = p.approve(&v, 2).await.unwrap();
    assert_eq!(done["status"], "ok");
    assert_eq!(p.counts(), (2, 1));
    p.handles.clear();
}

#[tokio::test]
async fn unknown_ids_and_decisions_for_other_calls_are_refused_with_nothing_run() {
    let p = Pausing::new();
    let v = p.run(THREE_CALLS).await;
    let unknown = p
        .resume(
            &json!("p1-0000000000000000"),
            json!([{"call": 2, "approve": true}]),
        )
        .await
        .unwrap_err();
    assert_eq!(
        unknown,
        "the paused run p1-0000000000000000 has expired: paused runs are kept for 86400 s"
    );
    let nonsense = p
        .resume(&json!("../../etc/passwd"), json!([]))
        .await
        .unwrap_err();
    assert_eq!(
        nonsense,
        "there is no paused run \"../../etc/passwd\": it was resumed already, dropped to keep the store within its bounds, or never existed"
    );
    let extra = p
        .resume(
            &v["paused"]["id"],
            json!([{"call": 2, "approve": true}, {"call": 3, "approve": true}]),
        )
        .await
        .unwrap_err();
    assert_eq!(
        extra,
        "call 3 does not wait for approval; the run waits on call(s) 2"
    );
    assert_eq!(p.counts(), (1, 0));
}

/// A listener that says it never asks, and asks anyway about `write`.
struct SaysItNeverAsks;

impl PreExecute for SaysItNeverAsks {
    fn pre_execute(&self, exec: &Exec) -> Decision {
        match exec.name() {
            "write" => Decision::Ask("write anyway?".into()),
            _ => Decision::Allow,
        }
    }

    fn may_ask(&self) -> bool {
        false
    }
}

#[tokio::test]
async fn runs_are_not_recorded_when_no_listener_may_ask() {
    // No journal is kept, so the run cannot pause: the ask the listener said it would never
    // give is a denial, as without a store.
    let mut p = Pausing::new();
    p._policy = p.registry.pre_execute(SaysItNeverAsks);
    let v = p.run(THREE_CALLS).await;
    assert_eq!(v["status"], "error", "{v:#}");
    assert_eq!(
        v["error"]["message"],
        "write: this call needs approval (write anyway?), and no approver is configured, so it was denied"
    );
    assert_eq!(p.counts(), (1, 0));
    // One listener that may ask among others that never do: the run records, and pauses.
    let _more = p.registry.pre_execute(SaysItNeverAsks);
    p._policy = p.registry.pre_execute(|_: &Exec| Decision::Allow);
    let v = p.run(THREE_CALLS).await;
    assert_eq!(v["status"], "paused", "{v:#}");
}

#[tokio::test]
async fn an_expired_run_cannot_be_resumed() {
    let p = Pausing::with(RunCodeConfig::default().paused_ttl(Duration::ZERO));
    let v = p.run(THREE_CALLS).await;
    assert_eq!(v["status"], "paused");
    let error = p.approve(&v, 2).await.unwrap_err();
    assert!(error.contains("has expired"), "{error}");
    assert_eq!(p.counts(), (1, 0));
}

#[tokio::test]
async fn without_a_store_or_past_the_journal_bound_a_call_that_needs_approval_is_denied() {
    let p = Pausing::with(RunCodeConfig::default().paused_runs(None));
    let v = p.run(THREE_CALLS).await;
    assert_eq!(v["status"], "error");
    assert_eq!(
        v["error"]["message"],
        "write: this call needs approval (write x1 to the disk?), and no approver is configured, so it was denied"
    );
    let p = Pausing::with(RunCodeConfig::default().max_journal_bytes(64));
    let v = p
        .run("await tools.step({i: 'a long enough argument to pass sixty-four bytes of journal'}); await tools.write({text: 'x'})")
        .await;
    assert_eq!(v["status"], "error");
    assert_eq!(
        v["error"]["message"],
        "write: this call needs approval (write x to the disk?), and the run recorded more than 64 bytes of tool arguments, results and clock readings, more than a paused run may keep, so it was denied"
    );
    assert_eq!(p.counts(), (1, 0));
}

#[tokio::test]
async fn a_result_past_the_journal_bound_arrives_whole_and_the_run_can_no_longer_pause() {
    let p = Pausing::with(RunCodeConfig::default().max_journal_bytes(1000));
    let v = p
        .run("const s = await tools.big({n: 5000}); let denied; try { await tools.write({text: 'x'}) } catch (e) { denied = e.message } return [s.length, s.at(-1), denied]")
        .await;
    assert_eq!(
        v["result"],
        json!([
            5000,
            "x",
            "this call needs approval (write x to the disk?), and the run recorded more than 1000 bytes of tool arguments, results and clock readings, more than a paused run may keep, so it was denied"
        ]),
        "{v:#}"
    );
    // Under the bound, a result arrives whole and is kept for the replay.
    let p = Pausing::with(RunCodeConfig::default().max_journal_bytes(100_000));
    let v = p
        .run(
            "const s = await tools.big({n: 5000}); await tools.write({text: 'x'}); return s.length",
        )
        .await;
    assert_eq!(v["status"], "paused", "{v:#}");
    let done = p.approve(&v, 2).await.unwrap();
    assert_eq!(done["result"], 5000, "{done:#}");
}

#[tokio::test]
async fn a_run_paused_in_a_file_store_resumes_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let store = || -> Option<Arc<dyn PausedRuns>> {
        Some(Arc::new(FilePausedRuns::new(dir.path()).unwrap()))
    };
    let first = Pausing::with(RunCodeConfig::default().paused_runs(store()));
    let v = first.run(THREE_CALLS).await;
    assert_eq!(v["status"], "paused");
    let id = v["paused"]["id"].as_str().unwrap().to_owned();
    assert!(dir.path().join(format!("{id}.json")).exists());
    drop(first);
    // Another process, as far as the run can tell: new registry, tools and store.
    let second = Pausing::with(RunCodeConfig::default().paused_runs(store()));
    let done = second
        .resume(&json!(id), json!([{"call": 2, "approve": true}]))
        .await
        .unwrap();
    assert_eq!(done["result"], json!([1, "wrote x1", 2, 1]));
    assert_eq!(second.counts(), (1, 1));
    assert!(!dir.path().join(format!("{id}.json")).exists());
}

#[tokio::test]
async fn a_program_that_ends_without_waiting_for_the_call_does_not_pause() {
    let p = Pausing::new();
    let v = p
        .run("tools.write({text: 'x'}).catch(() => {}); return 1")
        .await;
    assert_eq!(v["status"], "ok", "{v:#}");
    assert_eq!(v["result"], 1);
    assert_eq!(v["calls"][0]["status"], "cancelled");
    assert_eq!(p.counts(), (0, 0));
}

#[tokio::test]
async fn calls_that_wait_keep_their_journal_past_its_bound() {
    // The first write asks while the journal is small; the next ones' arguments pass the
    // bound, and still every call that waits can be approved.
    let p = Pausing::with(RunCodeConfig::default().max_journal_bytes(100));
    let v = p
        .run("return (await Promise.all([0, 1, 2].map(i => tools.write({text: 'x'.repeat(60) + i})))).length")
        .await;
    assert_eq!(v["status"], "paused", "{v:#}");
    assert_eq!(v["paused"]["approvals"].as_array().unwrap().len(), 3);
    let done = p
        .resume(
            &v["paused"]["id"],
            json!([{"call": 1, "approve": true}, {"call": 2, "approve": true}, {"call": 3, "approve": true}]),
        )
        .await
        .unwrap();
    assert_eq!(done["result"], 3, "{done:#}");
    assert_eq!(p.counts(), (0, 3));
}

#[tokio::test]
async fn a_deadline_that_passes_while_the_run_pauses_is_a_timeout() {
    let p = Pausing::new();
    let slow = p
        .registry
        .register(test_tool("slow").execute(|_a, exec| async move {
            exec.signal().cancelled().await;
            Ok(json!("stopped"))
        }))
        .unwrap();
    let v = p
        .registry
        .call(
            "run_code",
            json!({"code": "tools.slow({}).catch(() => {}); await tools.write({text: 'x'})", "timeout_ms": 300}),
        )
        .await
        .into_result()
        .unwrap();
    assert_eq!(v["status"], "error", "{v:#}");
    assert_eq!(v["error"]["name"], "TimeoutError");
    assert_eq!(v["calls"][1]["status"], "cancelled", "the write never ran");
    assert_eq!(p.counts(), (0, 0));
    drop(slow);
}

#[tokio::test]
async fn a_run_resumes_only_under_the_host_settings_it_paused_under() {
    let store: Arc<dyn PausedRuns> = Arc::new(MemoryPausedRuns::default());
    let config = |root: &str| {
        RunCodeConfig::default()
            .paused_runs(Some(store.clone()))
            .paused_host(json!({"root": root}))
    };
    let first = Pausing::with(config("/a"));
    let v = first.run(THREE_CALLS).await;
    let other = Pausing::with(config("/b"));
    let error = other.approve(&v, 2).await.unwrap_err();
    assert_eq!(
        error,
        "the run cannot resume here: it paused under other host settings ({\"root\":\"/a\"}) than this host's ({\"root\":\"/b\"})"
    );
    assert_eq!(other.counts(), (0, 0));
    // Kept: the host it paused under resumes it.
    let same = Pausing::with(config("/a"));
    let done = same.approve(&v, 2).await.unwrap();
    assert_eq!(done["status"], "ok");
    assert_eq!(same.counts(), (1, 1));
}
