//! The whole dispatch pipeline: identity, registration, policy stages in order,
//! error containment, nested calls under policy, the agent, presentation cards.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codemode::cards::{CallCard, ResultCard};
use codemode::hooks::{Approval, Deadline, Decision, Metrics, Next, PostOutcome, Retry};
use codemode::schema::{Node, ParameterSchema, ValueSchema};
use codemode::{
    Agent, AgentDisposed, Content, ErrorKind, Exec, FileTools, Outcome, Registry, Request,
    ToolError, Visibility,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::support::{Harness, fast_limits, test_tool};

type Log = Arc<Mutex<Vec<String>>>;

/// (call id, token, parent token, arguments, nested)
type Identity = (String, String, Option<String>, Value, bool);
/// (tool, is_error, value)
type Seen = (String, bool, Option<Value>);

fn push(log: &Log, s: impl Into<String>) {
    log.lock().unwrap().push(s.into());
}

#[tokio::test]
async fn every_call_carries_an_immutable_identity() {
    let registry = Registry::new();
    let seen: Arc<Mutex<Vec<Identity>>> = Arc::default();
    let record = seen.clone();
    registry
        .register(test_tool("who").execute(move |args, exec: Exec| {
            let record = record.clone();
            async move {
                record.lock().unwrap().push((
                    exec.call_id().to_string(),
                    exec.token().to_string(),
                    exec.parent().map(|p| p.to_string()),
                    (*args).clone(),
                    exec.is_nested(),
                ));
                Ok(json!(exec.name()))
            }
        }))
        .unwrap()
        .forget();
    let tokens: Arc<Mutex<Vec<String>>> = Arc::default();
    let t = tokens.clone();
    registry
        .observe(move |exec: &Exec, _o: &Outcome| {
            t.lock()
                .unwrap()
                .push(format!("{}:{}", exec.name(), exec.token()))
        })
        .forget();
    registry
        .register(codemode::run_code::run_code_tool(
            codemode::run_code::RunCodeConfig::default(),
        ))
        .unwrap()
        .forget();
    let direct = registry.call("who", json!({"n": 1})).await;
    assert_eq!(direct.value(), Some(&json!("who")));
    let run = registry
        .call("run_code", json!({"code": "await tools.who({n: 2})"}))
        .await;
    assert_eq!(run.value().unwrap()["result"], "who");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].2, None, "a direct call has no parent");
    assert!(!seen[0].4);
    assert!(seen[1].4, "the call from the program is nested");
    let run_token = tokens
        .lock()
        .unwrap()
        .iter()
        .find_map(|t| t.strip_prefix("run_code:").map(str::to_owned))
        .unwrap();
    assert_eq!(
        seen[1].2.as_deref(),
        Some(run_token.as_str()),
        "the parent is the run_code call"
    );
    assert_ne!(seen[0].0, seen[1].0, "call ids differ");
    assert_ne!(seen[0].1, seen[1].1, "tokens differ");
    assert_eq!(seen[1].3, json!({"n": 2}));
}

#[tokio::test]
async fn an_around_wrapper_narrows_the_signal_and_cannot_remove_it() {
    let registry = Registry::new();
    let observed: Arc<Mutex<Vec<bool>>> = Arc::default();
    let o = observed.clone();
    registry
        .around(move |exec: Exec, next: Next| {
            let o = o.clone();
            let fut: codemode::ExecuteFuture = Box::pin(async move {
                let (inner, narrowed) = exec.with_child_signal();
                let r = next.run(inner).await;
                // the wrapper's own signal is untouched by the inner layers' narrowing
                narrowed.cancel();
                o.lock().unwrap().push(exec.signal().is_cancelled());
                r
            });
            fut
        })
        .forget();
    registry
        .register(test_tool("wait").execute(|_a, exec: Exec| async move {
            exec.signal().cancelled().await;
            Err(ToolError::cancelled())
        }))
        .unwrap()
        .forget();
    let signal = CancellationToken::new();
    let call = tokio::spawn(registry.dispatch(Request::new("wait", json!({}), signal.clone())));
    tokio::time::sleep(Duration::from_millis(20)).await;
    signal.cancel();
    let outcome = call.await.unwrap();
    assert_eq!(
        outcome.error_kind(),
        Some(ErrorKind::Cancelled),
        "cancelling the caller reached the narrowed inner signal"
    );
    assert_eq!(*observed.lock().unwrap(), vec![true]);
}

#[tokio::test]
async fn hot_swap_keeps_running_calls_on_the_old_definition() {
    let registry = Registry::new();
    let release = Arc::new(tokio::sync::Notify::new());
    let r = release.clone();
    let old = registry
        .register(test_tool("v").execute(move |_a, _e| {
            let r = r.clone();
            async move {
                r.notified().await;
                Ok(json!("old"))
            }
        }))
        .unwrap();
    let running = tokio::spawn(registry.call("v", json!({})));
    tokio::time::sleep(Duration::from_millis(20)).await;
    old.dispose();
    let _new = registry
        .register(test_tool("v").returns(json!("new")))
        .unwrap();
    assert_eq!(
        registry.call("v", json!({})).await.value(),
        Some(&json!("new"))
    );
    release.notify_one();
    assert_eq!(running.await.unwrap().value(), Some(&json!("old")));
    // dropping an old handle after the swap does not remove the new definition
    assert_eq!(
        registry.call("v", json!({})).await.value(),
        Some(&json!("new"))
    );
}

#[test]
fn schemas_are_the_model_facing_projection_and_respect_visibility() {
    let registry = Registry::new();
    let _a = registry
        .register(
            test_tool("shown")
                .description("A visible tool.")
                .parameters(ParameterSchema::new([("x", Node::integer().required())]))
                .returns(json!(1)),
        )
        .unwrap();
    let _b = registry
        .register(
            test_tool("secret")
                .visibility(Visibility::Hidden)
                .returns(json!(1)),
        )
        .unwrap();
    let _c = registry
        .register(codemode::run_code::run_code_tool(
            codemode::run_code::RunCodeConfig::default(),
        ))
        .unwrap();
    let schemas = registry.schemas();
    let names: Vec<&str> = schemas.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["shown", "run_code"]);
    assert_eq!(
        serde_json::to_value(&schemas[0]).unwrap(),
        json!({"name": "shown", "description": "A visible tool.",
               "input_schema": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"], "additionalProperties": true},
               "output_schema": {}})
    );
    let sandbox: Vec<String> = registry
        .sandbox_tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(sandbox, ["shown"]);
}

#[tokio::test]
async fn stages_run_in_the_documented_order() {
    let registry = Registry::new();
    let log: Log = Arc::default();
    let (l1, l2, l3, l4, l5, l6) = (
        log.clone(),
        log.clone(),
        log.clone(),
        log.clone(),
        log.clone(),
        log.clone(),
    );
    registry
        .pre_execute(move |_e: &Exec| {
            push(&l1, "pre");
            Decision::Allow
        })
        .forget();
    registry
        .guard(move |_e: &Exec| {
            push(&l2, "guard");
            Ok(())
        })
        .forget();
    registry
        .around(move |exec: Exec, next: Next| {
            let l = l3.clone();
            let fut: codemode::ExecuteFuture = Box::pin(async move {
                push(&l, "outer before");
                let r = next.run(exec).await;
                push(&l, "outer after");
                r
            });
            fut
        })
        .forget();
    registry
        .around(move |exec: Exec, next: Next| {
            let l = l4.clone();
            let fut: codemode::ExecuteFuture = Box::pin(async move {
                push(&l, "inner before");
                let r = next.run(exec).await;
                push(&l, "inner after");
                r
            });
            fut
        })
        .forget();
    registry
        .post_execute(move |_e: &Exec, _o: &mut PostOutcome| push(&l5, "post"))
        .forget();
    registry
        .observe(move |_e: &Exec, _o: &Outcome| push(&l6, "observe"))
        .forget();
    let l7 = log.clone();
    registry
        .register(test_tool("t").execute(move |_a, _e| {
            let l = l7.clone();
            async move {
                push(&l, "execute");
                Ok(json!(1))
            }
        }))
        .unwrap()
        .forget();
    registry.call("t", json!({})).await;
    assert_eq!(
        *log.lock().unwrap(),
        [
            "pre",
            "guard",
            "outer before",
            "inner before",
            "execute",
            "inner after",
            "outer after",
            "post",
            "observe"
        ]
    );
}

#[tokio::test]
async fn pre_execute_denies_and_asks() {
    let registry = Registry::new();
    registry
        .register(test_tool("rm").returns(json!("removed")))
        .unwrap()
        .forget();
    registry
        .register(test_tool("ls").returns(json!("listed")))
        .unwrap()
        .forget();
    let _deny = registry.pre_execute(|e: &Exec| {
        if e.name() == "rm" {
            Decision::Ask("delete files?".into())
        } else {
            Decision::Allow
        }
    });
    let o = registry.call("rm", json!({})).await;
    assert_eq!(o.error_kind(), Some(ErrorKind::Denied));
    assert_eq!(
        o.text(),
        "this call needs approval (delete files?), and no approver is configured, so it was denied"
    );
    let asked: Arc<Mutex<Vec<String>>> = Arc::default();
    let a = asked.clone();
    registry.set_approver(Some(Arc::new(move |e: &Exec, prompt: &str| {
        a.lock().unwrap().push(format!("{}: {prompt}", e.name()));
        let answer = if prompt.contains("delete") {
            Approval::Denied("the user said no".into())
        } else {
            Approval::Approved
        };
        async move { answer }
    })));
    let o = registry.call("rm", json!({})).await;
    assert_eq!(
        (o.error_kind(), o.text()),
        (Some(ErrorKind::Denied), "the user said no".to_owned())
    );
    assert_eq!(*asked.lock().unwrap(), ["rm: delete files?"]);
    let _plain_deny = registry.pre_execute(|e: &Exec| {
        if e.name() == "ls" {
            Decision::Deny("listing is off today".into())
        } else {
            Decision::Allow
        }
    });
    let o = registry.call("ls", json!({})).await;
    assert_eq!(o.text(), "listing is off today");
}

#[tokio::test]
async fn a_guard_is_final_even_after_allow_and_post_execute() {
    let registry = Registry::new();
    registry
        .register(test_tool("t").returns(json!("ran")))
        .unwrap()
        .forget();
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    registry
        .around(move |exec: Exec, next: Next| {
            r.fetch_add(1, Ordering::SeqCst);
            next.run(exec)
        })
        .forget();
    registry.pre_execute(|_e: &Exec| Decision::Allow).forget();
    let guard = registry.guard(|_e: &Exec| Err("not on a Sunday".to_owned()));
    registry
        .post_execute(|_e: &Exec, o: &mut PostOutcome| o.replace_value(json!("sneaked in")))
        .forget();
    let o = registry.call("t", json!({})).await;
    assert_eq!(o.error_kind(), Some(ErrorKind::Denied));
    assert_eq!(o.text(), "not on a Sunday");
    assert_eq!(
        ran.load(Ordering::SeqCst),
        0,
        "a denied call never reaches the wrappers"
    );
    drop(guard);
    assert_eq!(
        registry.call("t", json!({})).await.value(),
        Some(&json!("sneaked in"))
    );
}

#[tokio::test]
async fn post_execute_replaces_blocks_and_attaches() {
    let registry = Registry::new();
    registry
        .register(
            test_tool("n")
                .output(ValueSchema::new(Node::integer()))
                .execute(|args, _e| {
                    let v = args.get("v").cloned().unwrap_or(json!(1));
                    async move { Ok(v) }
                }),
        )
        .unwrap()
        .forget();
    let _p = registry.post_execute(|_e: &Exec, o: &mut PostOutcome| {
        match o.result().ok().and_then(Value::as_i64) {
            Some(2) => o.replace_value(json!(20)),
            Some(3) => o.replace_content(vec![Content::text("three, said nicely")]),
            Some(4) => o.block("4 is not for models"),
            Some(5) => o.replace_value(json!("not an integer")),
            _ => {}
        }
        o.attach_context("checked by policy");
    });
    let o = registry.call("n", json!({"v": 2})).await;
    assert_eq!(
        (o.value(), o.text()),
        (Some(&json!(20)), "20\nchecked by policy".to_owned())
    );
    let o = registry.call("n", json!({"v": 3})).await;
    assert_eq!(
        (o.value(), o.text()),
        (
            Some(&json!(3)),
            "three, said nicely\nchecked by policy".to_owned()
        )
    );
    let o = registry.call("n", json!({"v": 4})).await;
    assert_eq!(o.error_kind(), Some(ErrorKind::Denied));
    assert_eq!(o.text(), "4 is not for models\nchecked by policy");
    let o = registry.call("n", json!({"v": 5})).await;
    assert_eq!(o.error_kind(), Some(ErrorKind::InvalidOutput));
}

#[tokio::test]
async fn observers_see_the_normalised_outcome() {
    let registry = Registry::new();
    registry
        .register(test_tool("t").returns(json!({"ok": true})))
        .unwrap()
        .forget();
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let s = seen.clone();
    registry
        .observe(move |_e: &Exec, o: &Outcome| {
            s.lock()
                .unwrap()
                .push((o.tool().to_owned(), o.is_error(), o.value().cloned()))
        })
        .forget();
    registry
        .observe(|_e: &Exec, _o: &Outcome| panic!("a clumsy observer"))
        .forget();
    let o = registry.call("t", json!({})).await;
    assert_eq!(
        o.value(),
        Some(&json!({"ok": true})),
        "a panicking observer changes nothing"
    );
    registry.call("t", json!([])).await;
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            ("t".to_owned(), false, Some(json!({"ok": true}))),
            ("t".to_owned(), true, None)
        ]
    );
}

#[tokio::test]
async fn ready_made_deadline_retry_and_metrics() {
    let registry = Registry::new();
    let metrics = Metrics::new();
    registry.around(metrics.clone()).forget();
    registry
        .around(Retry::new(3).backoff(Duration::from_millis(1)))
        .forget();
    registry
        .around(Deadline::new(Duration::from_millis(50)).grace(Duration::from_millis(200)))
        .forget();
    let tries = Arc::new(AtomicUsize::new(0));
    let t = tries.clone();
    registry
        .register(test_tool("flaky").execute(move |_a, _e| {
            let n = t.fetch_add(1, Ordering::SeqCst);
            async move {
                if n < 2 {
                    Err(ToolError::new("try again"))
                } else {
                    Ok(json!("third time"))
                }
            }
        }))
        .unwrap()
        .forget();
    let observed_cancel = Arc::new(AtomicUsize::new(0));
    let c = observed_cancel.clone();
    registry
        .register(
            test_tool("slow").execute(move |_a, exec: Exec| {
                let c = c.clone();
                async move {
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(10)) => Ok(json!("late")),
                        _ = exec.signal().cancelled() => { c.fetch_add(1, Ordering::SeqCst); Err(ToolError::cancelled()) }
                    }
                }
            }),
        )
        .unwrap()
        .forget();
    assert_eq!(
        registry.call("flaky", json!({})).await.value(),
        Some(&json!("third time"))
    );
    assert_eq!(tries.load(Ordering::SeqCst), 3);
    let started = Instant::now();
    let o = registry.call("slow", json!({})).await;
    assert_eq!(o.error_kind(), Some(ErrorKind::Timeout));
    assert_eq!(o.text(), "slow did not finish within its 50 ms deadline");
    assert_eq!(
        observed_cancel.load(Ordering::SeqCst),
        3,
        "each try's deadline cancelled its execute"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    let m = metrics.snapshot();
    assert_eq!((m.calls, m.errors), (2, 1));
    assert_eq!(
        m.by_tool["flaky"].calls, 1,
        "metrics is outside retry: one call"
    );
}

#[tokio::test]
async fn every_failure_is_contained_as_an_error_outcome() {
    let registry = Registry::new();
    let deep = (0..200).fold(json!(0), |acc, _| json!([acc]));
    registry
        .register(test_tool("deep").returns(deep))
        .unwrap()
        .forget();
    registry
        .register(
            test_tool("bad_render")
                .render(|_a, _v| panic!("renderer bug"))
                .returns(json!(1)),
        )
        .unwrap()
        .forget();
    registry
        .register(
            test_tool("bad_meta")
                .presentation_meta(|_a, _v| panic!("projector bug"))
                .returns(json!(1)),
        )
        .unwrap()
        .forget();
    registry
        .register(test_tool("exit_code").returns(json!({"exit": 1, "stderr": "failed test"})))
        .unwrap()
        .forget();
    let o = registry.call("deep", json!({})).await;
    assert_eq!(o.error_kind(), Some(ErrorKind::InvalidOutput));
    assert!(
        o.text().contains("nested deeper than 127 levels"),
        "{}",
        o.text()
    );
    let o = registry.call("bad_render", json!({})).await;
    assert_eq!(
        (o.error_kind(), o.text()),
        (
            Some(ErrorKind::Panicked),
            "the renderer of tool bad_render failed: renderer bug".to_owned()
        )
    );
    let o = registry.call("bad_meta", json!({})).await;
    assert_eq!(
        (o.error_kind(), o.text()),
        (
            Some(ErrorKind::Panicked),
            "the presentation projector of tool bad_meta failed: projector bug".to_owned()
        )
    );
    let o = registry.call("exit_code", json!({})).await;
    assert!(!o.is_error(), "a non-zero exit is a value, not an error");
    // panicking hooks
    let p = registry.pre_execute(|_e: &Exec| -> Decision { panic!("policy bug") });
    let o = registry.call("exit_code", json!({})).await;
    assert_eq!(o.error_kind(), Some(ErrorKind::Denied));
    assert_eq!(
        o.text(),
        "a policy check failed, so the call was not made (policy bug)"
    );
    drop(p);
    let g = registry.guard(|_e: &Exec| -> Result<(), String> { panic!("guard bug") });
    assert_eq!(
        registry.call("exit_code", json!({})).await.error_kind(),
        Some(ErrorKind::Denied)
    );
    drop(g);
    let a =
        registry.around(|_e: Exec, _n: Next| -> codemode::ExecuteFuture { panic!("wrapper bug") });
    let o = registry.call("exit_code", json!({})).await;
    assert_eq!(
        (o.error_kind(), o.text()),
        (
            Some(ErrorKind::Panicked),
            "tool exit_code failed unexpectedly: wrapper bug".to_owned()
        )
    );
    drop(a);
    let q = registry.post_execute(|_e: &Exec, _o: &mut PostOutcome| panic!("post bug"));
    let o = registry.call("exit_code", json!({})).await;
    assert_eq!(
        o.text(),
        "a post-execute check failed, so the result was withheld (post bug)"
    );
    drop(q);
    // internal kinds never reach model code: a program sees only the message
    let mut h = Harness::new(fast_limits());
    h.add(test_tool("deep").returns((0..200).fold(json!(0), |acc, _| json!([acc]))));
    let r = h.ok("try { await tools.deep() } catch (e) { return Object.keys(e).concat(Object.getOwnPropertyNames(e)) }").await;
    assert_eq!(
        r,
        json!(["name", "toolName", "message", "name", "toolName", "message"])
    );
}

#[tokio::test]
async fn nested_calls_obey_policy() {
    let mut h = Harness::new(fast_limits());
    h.add(test_tool("secret").returns(json!("classified")));
    h.add(test_tool("price").returns(json!(100)));
    h.add(test_tool("open").returns(json!("door opened")));
    let meta_calls = Arc::new(AtomicUsize::new(0));
    let m = meta_calls.clone();
    h.add(
        test_tool("meta")
            .presentation_meta(move |_a, _v| {
                m.fetch_add(1, Ordering::SeqCst);
                Some(json!({"shown": true}))
            })
            .returns(json!("m")),
    );
    let cancelled = Arc::new(AtomicUsize::new(0));
    let c = cancelled.clone();
    let started = Arc::new(AtomicUsize::new(0));
    let s = started.clone();
    h.add(test_tool("slow").execute(move |_a, exec: Exec| {
        let c = c.clone();
        s.fetch_add(1, Ordering::SeqCst);
        async move {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(30)) => Ok(json!("late")),
                _ = exec.signal().cancelled() => { c.fetch_add(1, Ordering::SeqCst); Err(ToolError::cancelled()) }
            }
        }
    }));
    let r = &h.registry;
    r.pre_execute(|e: &Exec| {
        if e.name() == "secret" {
            Decision::Deny("secrets stay secret".into())
        } else {
            Decision::Allow
        }
    })
    .forget();
    r.post_execute(|e: &Exec, o: &mut PostOutcome| {
        if e.name() == "price" {
            o.replace_value(json!(80))
        }
    })
    .forget();
    r.guard(|e: &Exec| {
        if e.name() == "open" {
            Err("doors stay shut".into())
        } else {
            Ok(())
        }
    })
    .forget();
    let deadline = r.around(|exec: Exec, next: Next| {
        if exec.name() == "slow" && exec.arguments().get("bounded").is_some() {
            codemode::hooks::Around::around(
                &Deadline::new(Duration::from_millis(50)).grace(Duration::from_millis(500)),
                exec,
                next,
            )
        } else {
            next.run(exec)
        }
    });

    let e = h.err("await tools.secret()").await;
    assert_eq!(
        (e["name"].clone(), e["message"].clone()),
        (json!("ToolCallError"), json!("secret: secrets stay secret"))
    );
    assert_eq!(h.ok("await tools.price()").await, json!(80));
    let e = h.err("await tools.open()").await;
    assert_eq!(e["message"], "open: doors stay shut");
    let e = h.err("await tools.slow({bounded: true})").await;
    assert_eq!(
        e["message"],
        "slow: slow did not finish within its 50 ms deadline"
    );
    assert_eq!(cancelled.load(Ordering::SeqCst), 1);
    drop(deadline);
    assert_eq!(h.ok("await tools.meta()").await, json!("m"));
    assert_eq!(
        meta_calls.load(Ordering::SeqCst),
        0,
        "presentation_meta is skipped for nested calls"
    );
    assert_eq!(
        h.registry.call("meta", json!({})).await.meta(),
        Some(&json!({"shown": true}))
    );

    // cancelling the outer run_code cancels its in-flight nested calls
    let signal = CancellationToken::new();
    let run = tokio::spawn(h.registry.dispatch(Request::new(
        "run_code",
        json!({"code": "await Promise.all([tools.slow({}), tools.slow({})])"}),
        signal.clone(),
    )));
    // Cancelled once both nested calls have started (not after a fixed wait: a run takes
    // longer to start in a debug build on a loaded machine).
    let deadline = Instant::now() + Duration::from_secs(30);
    while started.load(Ordering::SeqCst) < 3 {
        assert!(Instant::now() < deadline, "the nested calls never started");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    signal.cancel();
    let outcome = run.await.unwrap();
    let v = outcome.value().unwrap();
    assert_eq!(v["error"]["name"], "CancelledError");
    assert_eq!(
        v["calls"],
        json!([{"tool": "slow", "status": "cancelled", "ms": v["calls"][0]["ms"]}, {"tool": "slow", "status": "cancelled", "ms": v["calls"][1]["ms"]}])
    );
    assert_eq!(
        cancelled.load(Ordering::SeqCst),
        3,
        "both nested executes observed the cancelled signal"
    );
}

#[tokio::test]
async fn the_agent_keeps_injected_context_for_the_next_request() {
    let registry = Registry::new();
    registry
        .register(test_tool("note").execute(|_a, exec: Exec| async move {
            let kept = exec.agent().inject("the build is green", "note").is_ok();
            Ok(json!(kept))
        }))
        .unwrap()
        .forget();
    let agent = Agent::new();
    let o = registry
        .dispatch(Request::new("note", json!({}), CancellationToken::new()).agent(agent.clone()))
        .await;
    assert_eq!(o.value(), Some(&json!(true)));
    assert_eq!(agent.injections().len(), 1, "readable without draining");
    assert_eq!(agent.injections()[0].source, "note");
    assert_eq!(
        agent.injections()[0].content,
        Content::text("the build is green")
    );
    assert!(
        registry.agent().injections().is_empty(),
        "the registry's own agent got nothing"
    );
    assert_eq!(agent.take_injections().len(), 1);
    assert!(agent.injections().is_empty());
    agent.dispose();
    assert_eq!(agent.inject("late", "x"), Err(AgentDisposed));
    let o = registry
        .dispatch(Request::new("note", json!({}), CancellationToken::new()).agent(agent.clone()))
        .await;
    assert_eq!(
        o.value(),
        Some(&json!(false)),
        "a disposed agent fails softly; the call still succeeds"
    );
    assert!(agent.injections().is_empty());
}

#[tokio::test]
async fn built_in_tools_present_cards_and_bad_input_falls_back() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "x\nfind me\n").unwrap();
    let registry = Registry::new();
    let _h = FileTools::new(dir.path())
        .unwrap()
        .register(&registry)
        .unwrap();
    let grep = registry.get("grep").unwrap();
    let args = json!({"pattern": "find"});
    let outcome = registry.call("grep", args.clone()).await;
    let card = grep.present_result(&args, &outcome);
    assert_eq!(
        serde_json::to_value(&card).unwrap(),
        json!({"card": "search", "groups": [{"path": "a.txt", "matches": [{"line": 2, "text": "find me"}]}], "paths": [], "truncated": false, "total": 1})
    );
    let read = registry.get("read_file").unwrap();
    assert_eq!(
        read.present_call(&json!({"path": "a.txt", "offset": 2})),
        CallCard::Generic {
            title: "Read a.txt".into(),
            kind: "read".into(),
            raw_input: json!({"path": "a.txt", "offset": 2}),
            locations: vec![codemode::cards::Location {
                path: "a.txt".into(),
                line: Some(2)
            }],
        }
    );
    // malformed (old) arguments: the generic card, not a panic
    let old_args = json!({"file": "a.txt", "offset": "two"});
    assert!(
        matches!(read.present_call(&old_args), CallCard::Generic { ref title, .. } if title == "read_file")
    );
    let glob = registry.get("glob").unwrap();
    let o = registry.call("glob", json!({"pattern": "*.txt"})).await;
    assert!(
        matches!(glob.present_result(&json!({"pattern": "*.txt"}), &o), ResultCard::Search { ref paths, total: 1, .. } if paths == &["a.txt"])
    );
    // a panicking projector falls back too
    let t = test_tool("p")
        .present_call(|_a| panic!("projector bug"))
        .returns(json!(1));
    assert!(matches!(
        t.present_call(&json!({})),
        CallCard::Generic { .. }
    ));
}
