//! Background jobs: the runtime's rules, the job tools, `run_in_background` for tools that
//! opt in, and `run_code` in the background or yielding.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codemode::hooks::Decision;
use codemode::jobs::{
    JobEnd, JobError, JobSpec, JobStatus, Jobs, JobsConfig, KillReason, Producer,
    register_job_tools,
};
use codemode::run_code::{Limits, RunCodeConfig};
use codemode::schema::{Node, ParameterSchema};
use codemode::{Agent, BuildError, ErrorKind, Registry, Request, Tool, ToolError};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::support::{Harness, test_tool};

/// A tool that sleeps `ms` (default 50) and answers `{slept: ms}`, watching its signal:
/// `stopped` counts calls that saw the signal and cleaned up.
fn sleeper(stopped: Arc<AtomicUsize>) -> Tool {
    Tool::builder("sleeper")
        .parameters(ParameterSchema::new([("ms", Node::integer().minimum(0))]))
        .run_in_background(true)
        .execute(move |args, exec| {
            let stopped = stopped.clone();
            async move {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(50);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => Ok(json!({"slept": ms})),
                    () = exec.signal().cancelled() => {
                        stopped.fetch_add(1, Ordering::SeqCst);
                        Err(ToolError::cancelled())
                    }
                }
            }
        })
        .build()
        .unwrap()
}

fn registry_with_jobs(tool: Tool) -> (Registry, Vec<codemode::ToolHandle>) {
    let registry = Registry::new();
    let mut handles = register_job_tools(&registry).unwrap();
    handles.push(registry.register(tool).unwrap());
    (registry, handles)
}

async fn job_output(registry: &Registry, id: &str, wait_ms: u64) -> Value {
    registry
        .call("job_output", json!({"job_id": id, "wait_ms": wait_ms}))
        .await
        .into_result()
        .unwrap_or_else(|e| panic!("job_output failed: {}", e.message()))
}

/// Reads `id` until it is no longer running (at most 20 s): its last report, with
/// `output` holding everything read on the way.
async fn until_ended(registry: &Registry, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut output = String::new();
    loop {
        let mut report = job_output(registry, id, 1_000).await;
        output.push_str(report["output"].as_str().unwrap());
        if report["status"] != "running" {
            report["output"] = json!(output);
            return report;
        }
        assert!(Instant::now() < deadline, "job {id} never ended: {report}");
    }
}

async fn threads_gone(jobs: &Jobs) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while jobs.stats().threads > 0 {
        assert!(
            Instant::now() < deadline,
            "job threads left: {:?}",
            jobs.stats()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[test]
fn run_in_background_is_in_the_schema_and_declarations_only_when_the_tool_opts_in() {
    let on = sleeper(Arc::default());
    assert!(
        on.parameters()
            .properties()
            .contains_key("run_in_background")
    );
    let off = test_tool("plain").returns(json!(1));
    assert!(
        !off.parameters()
            .properties()
            .contains_key("run_in_background")
    );

    let registry = Registry::new();
    let _a = registry.register(on).unwrap();
    let _b = registry.register(off).unwrap();
    let d =
        codemode::declarations::declarations(&registry, codemode::declarations::Layout::Compact)
            .unwrap();
    assert_eq!(d.matches("run_in_background?: boolean").count(), 1, "{d}");

    let clash = Tool::builder("clash")
        .parameters(ParameterSchema::new([(
            "run_in_background",
            Node::string(),
        )]))
        .run_in_background(true)
        .execute(|_, _| async { Ok(json!(null)) })
        .build();
    assert_eq!(
        clash.unwrap_err(),
        BuildError::BackgroundArgument("clash".into())
    );
}

#[tokio::test]
async fn a_background_call_answers_with_the_handle_and_its_job_finishes_with_the_value() {
    let (registry, _h) = registry_with_jobs(sleeper(Arc::default()));
    let outcome = registry
        .call("sleeper", json!({"ms": 100, "run_in_background": true}))
        .await;
    assert_eq!(
        outcome.text(),
        "started background job sleeper-1; read it with job_output {\"job_id\": \"sleeper-1\"}"
    );
    assert_eq!(
        outcome.into_result().unwrap(),
        json!({"kind": "background", "job_id": "sleeper-1"})
    );
    let report = until_ended(&registry, "sleeper-1").await;
    assert_eq!(report["status"], "finished");
    assert_eq!(report["value"], json!({"slept": 100}));
    assert_eq!(report["kind"], "sleeper");
    assert_eq!(report["label"], "sleeper {\"ms\":100}");
    assert!(report["elapsed_ms"].as_u64().unwrap() >= 100, "{report}");
    // The owner hears of the end once, for its next model request.
    let notes: Vec<String> = registry
        .agent()
        .take_injections()
        .into_iter()
        .map(|i| i.content.as_text().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        notes,
        vec![
            "Background job sleeper-1 (sleeper {\"ms\":100}) finished. Read it with job_output {\"job_id\": \"sleeper-1\"}."
        ]
    );
    threads_gone(registry.jobs()).await;
}

#[tokio::test]
async fn a_call_cancelled_before_it_starts_starts_no_job() {
    let (registry, _h) = registry_with_jobs(sleeper(Arc::default()));
    let signal = CancellationToken::new();
    signal.cancel();
    let outcome = registry
        .dispatch(Request::new(
            "sleeper",
            json!({"run_in_background": true}),
            signal,
        ))
        .await;
    assert_eq!(outcome.error_kind().unwrap(), ErrorKind::Cancelled);
    assert_eq!(registry.jobs().stats().started, 0);
}

#[tokio::test]
async fn a_denied_background_call_starts_no_job() {
    let (registry, _h) = registry_with_jobs(sleeper(Arc::default()));
    let _deny = registry.pre_execute(|exec: &codemode::Exec| {
        if exec.name() == "sleeper" {
            Decision::Deny("no sleeping".into())
        } else {
            Decision::Allow
        }
    });
    let outcome = registry
        .call("sleeper", json!({"run_in_background": true}))
        .await;
    assert_eq!(outcome.error_kind().unwrap(), ErrorKind::Denied);
    assert_eq!(registry.jobs().stats().started, 0);
}

#[tokio::test]
async fn cancelling_the_call_after_the_handle_stops_the_waiting_not_the_job() {
    let stopped = Arc::new(AtomicUsize::new(0));
    let (registry, _h) = registry_with_jobs(sleeper(stopped.clone()));
    let signal = CancellationToken::new();
    let outcome = registry
        .dispatch(Request::new(
            "sleeper",
            json!({"ms": 150, "run_in_background": true}),
            signal.clone(),
        ))
        .await;
    assert!(!outcome.is_error());
    signal.cancel();
    let report = until_ended(&registry, "sleeper-1").await;
    assert_eq!(report["status"], "finished", "{report}");
    assert_eq!(stopped.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn job_kill_ends_the_job_after_its_cleanup() {
    let stopped = Arc::new(AtomicUsize::new(0));
    let (registry, _h) = registry_with_jobs(sleeper(stopped.clone()));
    registry
        .call("sleeper", json!({"ms": 60_000, "run_in_background": true}))
        .await
        .into_result()
        .unwrap();
    let started = Instant::now();
    let report = registry
        .call("job_kill", json!({"job_id": "sleeper-1"}))
        .await
        .into_result()
        .unwrap();
    assert_eq!(report["status"], "killed");
    assert_eq!(report["reason"], "killed");
    assert_eq!(stopped.load(Ordering::SeqCst), 1, "the tool saw its signal");
    assert!(started.elapsed() < Duration::from_secs(5));
    threads_gone(registry.jobs()).await;
    // Killing it again leaves it as it is.
    let again = registry
        .call("job_kill", json!({"job_id": "sleeper-1"}))
        .await
        .into_result()
        .unwrap();
    assert_eq!(again["status"], "killed");
    let notes = registry.agent().take_injections();
    assert_eq!(notes.len(), 1);
    assert_eq!(
        notes[0].content.as_text().unwrap(),
        "Background job sleeper-1 (sleeper {\"ms\":60000}) ended early: killed. Read it with job_output {\"job_id\": \"sleeper-1\"}."
    );
}

/// A tool that waits forever; when its call ends (polled to its end or dropped) it counts
/// whether its signal had fired by then.
fn signal_watcher(cancelled: Arc<AtomicUsize>, started: Arc<AtomicUsize>) -> Tool {
    struct Watch(codemode::Exec, Arc<AtomicUsize>);
    impl Drop for Watch {
        fn drop(&mut self) {
            if self.0.signal().is_cancelled() {
                self.1.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
    test_tool("watcher").execute(move |_args, exec| {
        started.fetch_add(1, Ordering::SeqCst);
        let watch = Watch(exec, cancelled.clone());
        async move {
            let _watch = watch;
            std::future::pending::<()>().await;
            Ok(json!(null))
        }
    })
}

/// A producer that runs until cancelled, counting cancels and cleanups.
fn endless(
    cancels: Arc<AtomicUsize>,
    cleaned: Arc<AtomicBool>,
) -> impl FnOnce(&codemode::jobs::JobContext) -> Producer + Send + 'static {
    move |context| {
        let signal = context.signal.clone();
        Producer {
            cancel: Box::new(move || {
                cancels.fetch_add(1, Ordering::SeqCst);
            }),
            done: Box::pin(async move {
                signal.cancelled().await;
                tokio::time::sleep(Duration::from_millis(20)).await;
                cleaned.store(true, Ordering::SeqCst);
                JobEnd::Failed("stopped".into())
            }),
            read_output: None,
        }
    }
}

#[tokio::test]
async fn disposing_the_owner_ends_its_jobs_and_a_gone_owner_starts_none() {
    let jobs = Jobs::default();
    let owner = Agent::new();
    let other = Agent::new();
    let cancels = Arc::new(AtomicUsize::new(0));
    let cleaned = Arc::new(AtomicBool::new(false));
    let mine = jobs
        .start(JobSpec::new(
            "work",
            "mine",
            owner.clone(),
            1 << 20,
            endless(cancels.clone(), cleaned.clone()),
        ))
        .unwrap();
    let theirs = jobs
        .start(JobSpec::new(
            "work",
            "theirs",
            other.clone(),
            1 << 20,
            endless(Arc::default(), Arc::default()),
        ))
        .unwrap();
    owner.dispose();
    let deadline = Instant::now() + Duration::from_secs(5);
    while jobs.stats().running > 1 {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(cleaned.load(Ordering::SeqCst), "done settles after cleanup");
    assert_eq!(cancels.load(Ordering::SeqCst), 1, "cancel is called once");
    // The owner is gone: its job cannot be read by anyone else.
    let never = CancellationToken::new();
    assert_eq!(
        jobs.output(&mine.job_id, &other, 100, Duration::ZERO, &never)
            .await
            .unwrap_err(),
        JobError::Unknown(mine.job_id.clone())
    );
    let still = jobs
        .output(&theirs.job_id, &other, 100, Duration::ZERO, &never)
        .await
        .unwrap();
    assert_eq!(still.status, JobStatus::Running);
    assert_eq!(
        jobs.start(JobSpec::new(
            "work",
            "late",
            owner.clone(),
            1 << 20,
            endless(Arc::default(), Arc::default())
        ))
        .unwrap_err(),
        JobError::OwnerGone
    );
    jobs.shutdown().await;
    assert_eq!(jobs.stats().threads, 0);
}

#[tokio::test]
async fn shutdown_ends_every_job_and_refuses_new_ones() {
    let jobs = Jobs::default();
    let owner = Agent::new();
    let cleaned: Vec<Arc<AtomicBool>> = (0..5).map(|_| Arc::default()).collect();
    let mut ids = Vec::new();
    for c in &cleaned {
        ids.push(
            jobs.start(JobSpec::new(
                "work",
                "w",
                owner.clone(),
                1 << 20,
                endless(Arc::default(), c.clone()),
            ))
            .unwrap()
            .job_id,
        );
    }
    assert_eq!(ids, ["work-1", "work-2", "work-3", "work-4", "work-5"]);
    let started = Instant::now();
    jobs.shutdown().await;
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert!(cleaned.iter().all(|c| c.load(Ordering::SeqCst)));
    assert_eq!(jobs.stats().threads, 0);
    assert!(!jobs.is_accepting());
    let never = CancellationToken::new();
    let report = jobs
        .output("work-1", &owner, 100, Duration::ZERO, &never)
        .await
        .unwrap();
    assert_eq!(report.status, JobStatus::Killed(KillReason::Shutdown));
    assert_eq!(
        jobs.start(JobSpec::new(
            "work",
            "late",
            owner.clone(),
            1 << 20,
            endless(Arc::default(), Arc::default())
        ))
        .unwrap_err(),
        JobError::ShuttingDown
    );
}

#[tokio::test]
async fn running_jobs_are_bounded_per_owner_and_in_all() {
    let jobs = Jobs::new(JobsConfig::default().max_running(2, 3));
    let (a, b) = (Agent::new(), Agent::new());
    let start = |owner: &Agent| {
        jobs.start(JobSpec::new(
            "work",
            "w",
            owner.clone(),
            1 << 20,
            endless(Arc::default(), Arc::default()),
        ))
    };
    start(&a).unwrap();
    start(&a).unwrap();
    let third = start(&a).unwrap_err();
    assert_eq!(third, JobError::TooManyForOwner { limit: 2 });
    assert_eq!(ToolError::from(third).kind(), ErrorKind::Limit);
    start(&b).unwrap();
    assert_eq!(start(&b).unwrap_err(), JobError::TooMany { limit: 3 });
    assert_eq!(jobs.stats().started, 3, "a refused job takes no id");
    assert_eq!(jobs.stats().running, 3);
    jobs.shutdown().await;
}

/// Starts job `talk` of `owner`: it writes `first`, waits for `go`, writes `last`, lingers
/// for `linger` and finishes with `"done"`. Each read of its output calls `after_read`
/// before it returns. Its id.
fn start_talking_job(
    jobs: &Jobs,
    owner: &Agent,
    first: String,
    go: tokio::sync::oneshot::Receiver<()>,
    (last, linger): (&'static str, Duration),
    after_read: impl Fn() + Send + Sync + 'static,
) -> String {
    jobs.start(JobSpec::new(
        "talk",
        "t",
        owner.clone(),
        1 << 20,
        move |context| {
            let out = context.output_buffer();
            out.push(&first);
            let later = out.clone();
            Producer {
                cancel: Box::new(|| {}),
                done: Box::pin(async move {
                    let _ = go.await;
                    later.push(last);
                    tokio::time::sleep(linger).await;
                    JobEnd::Finished(json!("done"))
                }),
                read_output: Some(Box::new(move |max| {
                    let read = out.read(max);
                    after_read();
                    read
                })),
            }
        },
    ))
    .unwrap()
    .job_id
}

/// A job that writes its last line and ends while its output is being read is reported
/// running, not ended without that line: the status is read before the output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_that_says_ended_holds_everything_the_job_wrote() {
    let jobs = Jobs::default();
    let owner = Agent::new();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let tx = Mutex::new(Some(tx));
    let watch = jobs.clone();
    // The first read lets the job write its last line and end before the read returns.
    let job_id = start_talking_job(
        &jobs,
        &owner,
        "first\n".to_owned(),
        rx,
        ("last\n", Duration::ZERO),
        move || {
            if let Some(tx) = tx.lock().unwrap().take() {
                let _ = tx.send(());
                let deadline = Instant::now() + Duration::from_secs(10);
                while watch.stats().running > 0 && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(1));
                }
                assert_eq!(watch.stats().running, 0, "the job ended");
            }
        },
    );
    let never = CancellationToken::new();
    let id = job_id.as_str();
    let first = jobs
        .output(id, &owner, 1000, Duration::ZERO, &never)
        .await
        .unwrap();
    assert_eq!(
        (first.output.text.as_str(), &first.status),
        ("first\n", &JobStatus::Running)
    );
    let rest = jobs
        .output(id, &owner, 1000, Duration::ZERO, &never)
        .await
        .unwrap();
    assert_eq!(rest.output.text, "last\n");
    assert!(
        matches!(&rest.status, JobStatus::Finished(v) if *v == json!("done")),
        "{:?}",
        rest.status
    );
    jobs.shutdown().await;
}

#[tokio::test]
async fn read_output_is_consumed_bounded_and_waited_for() {
    let jobs = Jobs::default();
    let owner = Agent::new();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let job_id = start_talking_job(
        &jobs,
        &owner,
        "x".repeat(100),
        rx,
        ("late line\n", Duration::from_millis(50)),
        || {},
    );
    let never = CancellationToken::new();
    let id = job_id.as_str();
    let first = jobs
        .output(id, &owner, 10, Duration::ZERO, &never)
        .await
        .unwrap();
    assert_eq!(first.output.text, "xxxxxxxxxx\n… 90 more bytes");
    let rest = jobs
        .output(id, &owner, 1000, Duration::ZERO, &never)
        .await
        .unwrap();
    assert_eq!(rest.output.text, "x".repeat(90));
    assert_eq!(rest.status, JobStatus::Running);
    // Nothing new: a wait ends with the news, well before its limit.
    let waiting = jobs.output(id, &owner, 1000, Duration::from_secs(10), &never);
    let started = Instant::now();
    let _ = tx.send(());
    let news = waiting.await.unwrap();
    assert_eq!(news.output.text, "late line\n");
    assert!(started.elapsed() < Duration::from_secs(5));
    let end = loop {
        let r = jobs
            .output(id, &owner, 1000, Duration::from_secs(1), &never)
            .await
            .unwrap();
        if r.status != JobStatus::Running {
            break r;
        }
    };
    assert_eq!(end.status, JobStatus::Finished(json!("done")));
    assert_eq!(end.output.text, "", "what was read is not returned again");
    jobs.shutdown().await;
}

#[tokio::test]
async fn a_finished_job_expires_and_another_owner_never_sees_one() {
    let (registry, _h) = registry_with_jobs(sleeper(Arc::default()));
    registry
        .jobs()
        .configure(JobsConfig::default().keep_finished(Duration::from_millis(200)));
    registry
        .call("sleeper", json!({"ms": 10, "run_in_background": true}))
        .await
        .into_result()
        .unwrap();
    assert_eq!(
        until_ended(&registry, "sleeper-1").await["status"],
        "finished"
    );

    // Another conversation asks for it: unknown, as an id that never was.
    let stranger = registry
        .dispatch(
            Request::new(
                "job_output",
                json!({"job_id": "sleeper-1"}),
                CancellationToken::new(),
            )
            .agent(Agent::new()),
        )
        .await;
    assert_eq!(
        stranger.error_info().unwrap().message(),
        "no background job \"sleeper-1\" (job_list lists yours)"
    );
    let never = registry
        .call("job_output", json!({"job_id": "sleeper-9"}))
        .await;
    assert_eq!(
        never.error_info().unwrap().message(),
        "no background job \"sleeper-9\" (job_list lists yours)"
    );
    let listed = registry
        .call("job_list", json!({}))
        .await
        .into_result()
        .unwrap();
    assert_eq!(listed["jobs"].as_array().unwrap().len(), 1);

    tokio::time::sleep(Duration::from_millis(300)).await;
    let expired = registry
        .call("job_output", json!({"job_id": "sleeper-1"}))
        .await;
    assert_eq!(
        expired.error_info().unwrap().message(),
        "background job sleeper-1 expired: it ended and its output was dropped (a finished job is kept 200 ms)"
    );
    let listed = registry
        .call("job_list", json!({}))
        .await
        .into_result()
        .unwrap();
    assert_eq!(listed, json!({"jobs": []}));
}

fn run_code_harness(config: RunCodeConfig) -> (Harness, Vec<codemode::ToolHandle>) {
    let h = Harness::with_config(config);
    let handles = register_job_tools(&h.registry).unwrap();
    (h, handles)
}

#[tokio::test]
async fn run_code_in_the_background_streams_its_logs_and_ends_with_the_run_s_value() {
    let (h, _j) = run_code_harness(RunCodeConfig::default());
    let handle = h
        .registry
        .call(
            "run_code",
            json!({"code": "console.log('first'); await new Promise(r => setTimeout(r, 300)); console.warn('second'); return 42", "run_in_background": true}),
        )
        .await;
    assert_eq!(
        handle.text(),
        "started background job run_code-1; read its output with job_output {\"job_id\": \"run_code-1\", \"wait_ms\": 10000}, stop it with job_kill"
    );
    assert_eq!(
        handle.into_result().unwrap(),
        json!({"kind": "background", "job_id": "run_code-1"})
    );
    let first = job_output(&h.registry, "run_code-1", 5_000).await;
    assert_eq!(first["status"], "running");
    assert_eq!(first["output"], "first\n");
    assert_eq!(
        first["label"],
        "console.log('first'); await new Promise(r => setTimeout(r, 3…"
    );
    let end = until_ended(&h.registry, "run_code-1").await;
    assert_eq!(end["status"], "finished");
    assert_eq!(end["output"], "[warn] second\n");
    assert_eq!(end["value"]["status"], "ok");
    assert_eq!(end["value"]["result"], 42);
    assert_eq!(
        end["value"]["logs"],
        json!([{"level": "log", "text": "first"}, {"level": "warn", "text": "second"}])
    );
}

#[tokio::test]
async fn a_run_past_yield_after_goes_on_as_a_job_and_one_within_it_answers_as_usual() {
    let (h, _j) = run_code_harness(RunCodeConfig::default());
    let quick = h
        .registry
        .call(
            "run_code",
            json!({"code": "return 1 + 1", "yield_after_ms": 5_000}),
        )
        .await
        .into_result()
        .unwrap();
    assert_eq!(quick["status"], "ok");
    assert_eq!(quick["result"], 2);
    assert_eq!(
        h.registry.jobs().list(h.registry.agent()),
        vec![],
        "no job is left of it"
    );
    assert_eq!(
        h.registry.agent().take_injections(),
        vec![],
        "nor any notice"
    );

    let slow = h
        .registry
        .call(
            "run_code",
            json!({"code": "console.log('working'); await new Promise(r => setTimeout(r, 600)); return 'late'", "yield_after_ms": 100}),
        )
        .await;
    let value = slow.into_result().unwrap();
    assert_eq!(value["status"], "running");
    let id = value["job_id"].as_str().unwrap().to_owned();
    assert_eq!(value["output"], "working\n");
    let end = until_ended(&h.registry, &id).await;
    assert_eq!(end["value"]["result"], "late");
    assert_eq!(
        end["output"], "",
        "the output handed back is not read again"
    );
    let notes = h.registry.agent().take_injections();
    assert_eq!(notes.len(), 1, "the published job's end is announced");
}

#[tokio::test]
async fn cancelling_a_yielding_run_before_it_yields_ends_the_run() {
    let (h, _j) = run_code_harness(RunCodeConfig::default());
    let signal = CancellationToken::new();
    let call = h.registry.dispatch(Request::new(
        "run_code",
        json!({"code": "while (true) {}", "yield_after_ms": 10_000}),
        signal.clone(),
    ));
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        signal.cancel();
    };
    let (outcome, ()) = tokio::join!(call, cancel);
    assert_eq!(
        outcome.error_kind().unwrap(),
        ErrorKind::Cancelled,
        "{}",
        outcome.text()
    );
    threads_gone(h.registry.jobs()).await;
    assert_eq!(h.registry.jobs().list(h.registry.agent()), vec![]);
}

#[tokio::test]
async fn a_background_run_keeps_its_own_time_and_memory_limits() {
    let config = RunCodeConfig::default()
        .limits(Limits::default().memory(16 << 20))
        .background_timeout(Duration::from_millis(300));
    let (h, _j) = run_code_harness(config);
    for code in [
        "while (true) {}",
        // A megabyte a turn: the 16 MiB limit comes long before the 300 ms one, even on a
        // machine slowed many times over by its load.
        "const a = []; while (true) a.push('x'.repeat(1 << 20));",
    ] {
        h.registry
            .call("run_code", json!({"code": code, "run_in_background": true}))
            .await
            .into_result()
            .unwrap();
    }
    let looped = until_ended(&h.registry, "run_code-1").await;
    assert_eq!(looped["value"]["status"], "error");
    assert_eq!(looped["value"]["error"]["name"], "TimeoutError", "{looped}");
    let bomb = until_ended(&h.registry, "run_code-2").await;
    assert_eq!(bomb["value"]["status"], "error");
    assert_eq!(bomb["value"]["error"]["name"], "OutOfMemory", "{bomb}");
    // A foreground call may not ask for more than the background bound either.
    let over = h
        .registry
        .call("run_code", json!({"code": "1", "timeout_ms": 300_001}))
        .await;
    assert_eq!(over.error_kind().unwrap(), ErrorKind::InvalidArguments);
}

#[tokio::test]
async fn job_kill_of_a_run_cancels_its_calls_in_flight() {
    let stopped = Arc::new(AtomicUsize::new(0));
    let (h, _j) = run_code_harness(RunCodeConfig::default());
    let started = Arc::new(AtomicUsize::new(0));
    let _t = h
        .registry
        .register(signal_watcher(stopped.clone(), started.clone()))
        .unwrap();
    h.registry
        .call(
            "run_code",
            json!({"code": "console.log('go'); await tools.watcher({})", "run_in_background": true}),
        )
        .await
        .into_result()
        .unwrap();
    assert_eq!(
        job_output(&h.registry, "run_code-1", 5_000).await["output"],
        "go\n"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while started.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the nested call never started");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let killed = h
        .registry
        .call("job_kill", json!({"job_id": "run_code-1"}))
        .await
        .into_result()
        .unwrap();
    assert_eq!(killed["status"], "killed");
    // The nested call's future is dropped with the run's state, possibly a moment later.
    let deadline = Instant::now() + Duration::from_secs(10);
    while stopped.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        stopped.load(Ordering::SeqCst),
        1,
        "the nested call saw the job's signal"
    );
    threads_gone(h.registry.jobs()).await;
}

/// Resident memory of this process, in bytes.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

#[test]
fn a_hundred_jobs_end_within_a_second_of_shutdown_leaving_no_process_or_memory() {
    // Alone among the heavy tests (it times the shutdown), and in a process of its own:
    // resident memory is the whole process's, other tests' included.
    let _heavy = crate::support::heavy();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "jobs::a_hundred_jobs_alone",
            "--ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "{stdout}");
    eprint!("{stderr}");
}

#[test]
#[ignore = "run in a process of its own by a_hundred_jobs_end_within_a_second_of_shutdown_leaving_no_process_or_memory"]
fn a_hundred_jobs_alone() {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(a_hundred_jobs());
}

async fn a_hundred_jobs() {
    let marker = format!("codemode-load-{}", std::process::id());
    let manifest = codemode::manifest::Manifest::from_json(
        &json!({"tools": [{
            "name": "wait", "command": ["sh", "-c", "sleep 600; true", marker],
            "run_in_background": true, "timeout_ms": 600_000,
        }]}),
        std::path::Path::new("."),
        "load.json",
    )
    .unwrap();
    // A harness with run_code, the job tools and the command tool, for 128 jobs at once.
    let harness = || {
        let (h, mut handles) = run_code_harness(RunCodeConfig::default());
        handles.extend(manifest.register(&h.registry).unwrap());
        h.registry
            .jobs()
            .configure(JobsConfig::default().max_running(128, 128));
        (h, handles)
    };
    // Half programs waiting on a timer, half commands sleeping.
    let start_all = |registry: Registry, n: usize| async move {
        for i in 0..n {
            let (tool, args) = if i % 2 == 0 {
                (
                    "run_code",
                    json!({"code": "await new Promise(r => setTimeout(r, 600000))", "run_in_background": true}),
                )
            } else {
                ("wait", json!({"run_in_background": true}))
            };
            let handle = registry.call(tool, args).await.into_result().unwrap();
            assert_eq!(handle["kind"], "background");
        }
    };
    // A first round warms what stays (the allocator's arenas, the engine's statics).
    {
        let (h, _handles) = harness();
        start_all(h.registry.clone(), 10).await;
        h.registry.jobs().shutdown().await;
    }
    let (h, _handles) = harness();
    let baseline = rss();
    start_all(h.registry.clone(), 100).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while crate::support::processes_with(&marker) < 50 {
        assert!(
            Instant::now() < deadline,
            "only {} commands started",
            crate::support::processes_with(&marker)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stats = h.registry.jobs().stats();
    assert_eq!((stats.running, stats.threads), (100, 100));
    let peak = rss();

    let started = Instant::now();
    h.registry.jobs().shutdown().await;
    let took = started.elapsed();
    assert_eq!(h.registry.jobs().stats().threads, 0);
    assert_eq!(
        crate::support::processes_left(&marker, Duration::from_secs(5)),
        0,
        "no command is left"
    );
    // Engines are freed by a reaper thread, and the allocator keeps freed pages until
    // asked: give both a moment, then measure what is really held.
    let mut after = rss();
    let settle = Instant::now() + Duration::from_secs(3);
    while after > baseline + (2 << 20) && Instant::now() < settle {
        tokio::time::sleep(Duration::from_millis(100)).await;
        // SAFETY: malloc_trim only returns free memory of the allocator to the system.
        unsafe { libc::malloc_trim(0) };
        after = rss();
    }
    eprintln!(
        "100 jobs: shutdown {took:?}; resident memory {} MiB before, {} MiB with the jobs ({} KiB per job), {} MiB after",
        baseline >> 20,
        peak >> 20,
        (peak.saturating_sub(baseline) / 100) >> 10,
        after >> 20
    );
    assert!(took < Duration::from_secs(1), "shutdown took {took:?}");
    assert!(
        after <= baseline + (16 << 20),
        "memory did not come back: {} MiB before, {} MiB after",
        baseline >> 20,
        after >> 20
    );
}

#[tokio::test]
async fn job_kill_of_a_command_tool_kills_its_process_group() {
    let marker = format!("codemode-kill-{}", std::process::id());
    let manifest = codemode::manifest::Manifest::from_json(
        &json!({"tools": [{
            "name": "wait", "command": ["sh", "-c", "sleep 600; true", marker],
            "run_in_background": true, "timeout_ms": 600_000,
        }]}),
        std::path::Path::new("."),
        "kill.json",
    )
    .unwrap();
    let registry = Registry::new();
    let _jobs = register_job_tools(&registry).unwrap();
    let _wait = manifest.register(&registry).unwrap();
    let handle = registry
        .call("wait", json!({"run_in_background": true}))
        .await
        .into_result()
        .unwrap();
    assert_eq!(handle, json!({"kind": "background", "job_id": "wait-1"}));
    let deadline = Instant::now() + Duration::from_secs(10);
    while crate::support::processes_with(&marker) == 0 {
        assert!(Instant::now() < deadline, "the command never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let killed = registry
        .call("job_kill", json!({"job_id": "wait-1"}))
        .await
        .into_result()
        .unwrap();
    assert_eq!(killed["status"], "killed");
    assert_eq!(
        crate::support::processes_left(&marker, Duration::from_secs(5)),
        0,
        "the command's group is gone"
    );
    threads_gone(registry.jobs()).await;
}

#[tokio::test]
async fn a_background_run_s_final_value_is_capped_and_spilled() {
    let (h, _j) = run_code_harness(RunCodeConfig::default().output_cap(400));
    h.registry
        .call(
            "run_code",
            json!({"code": "for (let i = 0; i < 200; i++) console.log('line ' + i); return 'x'.repeat(5000)", "run_in_background": true}),
        )
        .await
        .into_result()
        .unwrap();
    let end = until_ended(&h.registry, "run_code-1").await;
    let value = &end["value"];
    assert_eq!(value["status"], "ok");
    let spill = value["spill"]["path"].as_str().expect("spilled");
    let full = std::fs::read_to_string(spill).unwrap();
    assert!(
        full.contains("line 0\n") && full.contains("line 199\n"),
        "{full}"
    );
    assert!(full.contains(&"x".repeat(5000)));
    let shown = codemode::run_code::render_text(value);
    assert!(shown.chars().count() <= 400, "{shown}");
    // The live output had every line, read once.
    let lines: Vec<&str> = end["output"].as_str().unwrap().lines().collect();
    assert_eq!(lines.len(), 200, "{end:#}");
    assert_eq!(lines[199], "line 199");
}

#[tokio::test]
async fn foreground_runs_need_no_job_slot_and_stay_in_the_foreground_when_none_is_free() {
    let (h, _j) = run_code_harness(RunCodeConfig::default());
    h.registry
        .jobs()
        .configure(JobsConfig::default().max_running(1, 1));
    h.registry
        .call(
            "run_code",
            json!({"code": "await new Promise(r => setTimeout(r, 60000))", "run_in_background": true}),
        )
        .await
        .into_result()
        .unwrap();
    // Every slot is taken: a quick run still answers, and a slow one that would yield stays
    // in the foreground to its end.
    let quick = h
        .registry
        .call(
            "run_code",
            json!({"code": "return 1", "yield_after_ms": 50}),
        )
        .await
        .into_result()
        .unwrap();
    assert_eq!(quick["result"], 1);
    let slow = h
        .registry
        .call(
            "run_code",
            json!({"code": "await new Promise(r => setTimeout(r, 300)); return 2", "yield_after_ms": 50}),
        )
        .await
        .into_result()
        .unwrap();
    assert_eq!(slow["status"], "ok", "{slow}");
    assert_eq!(slow["result"], 2);
    // yield_after_ms 0 waits for the end, as --yield-after 0 does.
    let zero = h
        .registry
        .call(
            "run_code",
            json!({"code": "await new Promise(r => setTimeout(r, 100)); return 3", "yield_after_ms": 0}),
        )
        .await
        .into_result()
        .unwrap();
    assert_eq!(zero["result"], 3);
    h.registry.jobs().shutdown().await;
}
