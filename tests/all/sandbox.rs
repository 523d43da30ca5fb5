//! The sandbox: names, concurrency, ending, limits, program forms, isolation.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use codemode::run_code::{EnginePool, Limits, RunCodeConfig};
use codemode::{Exec, Tool, ToolError};
use serde_json::{Value, json};

use crate::support::{Harness, echo_tool, fast_limits, test_tool};

fn sleeper(
    name: &str,
    peak: Arc<AtomicUsize>,
    now: Arc<AtomicUsize>,
    cancelled: Arc<AtomicUsize>,
) -> Tool {
    test_tool(name).execute(move |args, exec: Exec| {
        let (peak, now, cancelled) = (peak.clone(), now.clone(), cancelled.clone());
        async move {
            let running = now.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(running, Ordering::SeqCst);
            let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(100);
            let r = tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(ms)) => Ok(json!(ms)),
                _ = exec.signal().cancelled() => {
                    cancelled.fetch_add(1, Ordering::SeqCst);
                    Err(ToolError::cancelled())
                }
            };
            now.fetch_sub(1, Ordering::SeqCst);
            r
        }
    })
}

#[tokio::test]
async fn names_that_are_not_identifiers_dispatch_by_name_and_by_alias() {
    let mut h = Harness::new(fast_limits());
    h.add(test_tool("my-tool").returns(json!("mine")));
    h.add(test_tool("github.search").returns(json!("found")));
    let r = h
        .ok("[await tools['my-tool']({}), await tools.my_tool({}), await tools['github.search'](), await tools.github_search(), Object.keys(tools)]")
        .await;
    assert_eq!(
        r,
        json!([
            "mine",
            "mine",
            "found",
            "found",
            ["my-tool", "github.search"]
        ])
    );
    // Each name and alias is an own data property, neither writable nor configurable; the
    // names are enumerable, the aliases and the discovery functions not; `tools` is frozen.
    let r = h
        .ok("const d = (k) => { const p = Object.getOwnPropertyDescriptor(tools, k); return [p.enumerable, p.writable, p.configurable, p.value === tools[k]] };
return { keys: Reflect.ownKeys(tools), name: d('my-tool'), alias: d('my_tool'), same: tools['my-tool'] === tools.my_tool, fn: tools.my_tool.name, frozen: Object.isFrozen(tools), plain: Object.getPrototypeOf(tools) === Object.prototype }")
        .await;
    assert_eq!(
        r,
        json!({
            "keys": ["my-tool", "my_tool", "github.search", "github_search", "$search", "$describe"],
            "name": [true, false, false, true],
            "alias": [false, false, false, true],
            "same": true,
            "fn": "my_tool",
            "frozen": true,
            "plain": false
        })
    );
}

/// The globals the sandbox adds can be neither replaced nor deleted, nor redefined, and
/// `console` is frozen (`performance.now` and `timeOrigin` are read-only too): a program that tries gets the engine's TypeError (strict) or no
/// change (sloppy), and every name still works afterwards.
#[tokio::test]
async fn the_sandbox_globals_cannot_be_replaced_deleted_or_redefined() {
    let h = Harness::new(fast_limits());
    let r = h
        .ok(r#"
const names = ["tools", "console", "ToolCallError", "setTimeout", "clearTimeout", "setInterval", "clearInterval"];
const flags = names.map((n) => {
  const d = Object.getOwnPropertyDescriptor(globalThis, n);
  return [n, typeof d.value, d.writable, d.enumerable, d.configurable];
});
const sloppy = names.map((n) => { globalThis[n] = 1; delete globalThis[n]; return globalThis[n] !== 1; });
const strict = names.map((n) => { "use strict"; try { globalThis[n] = 1; return "no error" } catch (e) { return e.name } });
let redefine;
try { Object.defineProperty(globalThis, "tools", { value: 1 }); redefine = "no error" } catch (e) { redefine = e.name }
console.log = () => {};
const perf = ["now", "timeOrigin"].map((k) => { const d = Object.getOwnPropertyDescriptor(performance, k); return [k, typeof d.value, d.writable, d.enumerable, d.configurable] });
return { flags, sloppy, strict, redefine, frozen: Object.isFrozen(console), perf, works: await new Promise((r) => setTimeout(() => r(typeof tools), 1)) };
"#)
        .await;
    let flags: Vec<Value> = [
        ("tools", "object"),
        ("console", "object"),
        ("ToolCallError", "function"),
        ("setTimeout", "function"),
        ("clearTimeout", "function"),
        ("setInterval", "function"),
        ("clearInterval", "function"),
    ]
    .iter()
    .map(|(n, t)| json!([n, t, false, false, false]))
    .collect();
    assert_eq!(
        r,
        json!({
            "flags": flags,
            "sloppy": [true, true, true, true, true, true, true],
            "strict": ["TypeError", "TypeError", "TypeError", "TypeError", "TypeError", "TypeError", "TypeError"],
            "redefine": "TypeError",
            "frozen": true,
            "perf": [["now", "function", false, true, false], ["timeOrigin", "number", false, true, false]],
            "works": "object"
        })
    );
}

/// The two accessors the sandbox wraps (`Error.prototype.stack`, which maps positions to
/// the program's, and `Error.stackTraceLimit`'s setter) keep the engine's other halves and
/// flags: a getter and a setter each, configurable, not enumerable.
#[tokio::test]
async fn the_wrapped_error_accessors_keep_the_engines_flags() {
    let h = Harness::new(fast_limits());
    let r = h
        .ok(r#"
const shape = (o, k) => { const d = Object.getOwnPropertyDescriptor(o, k); return [typeof d.get, typeof d.set, d.enumerable, d.configurable] };
const e = new Error("x");
e.stack = "set";
Error.stackTraceLimit = 3;
return { stack: shape(Error.prototype, "stack"), limit: shape(Error, "stackTraceLimit"), set: e.stack, read: Error.stackTraceLimit };
"#)
        .await;
    assert_eq!(
        r,
        json!({
            "stack": ["function", "function", false, true],
            "limit": ["function", "function", false, true],
            "set": "set",
            "read": 3
        })
    );
}

#[tokio::test]
async fn tool_functions_are_native_and_reentrant() {
    let mut h = Harness::new(fast_limits());
    h.add(echo_tool());
    h.add(sleeper(
        "sleepy",
        Arc::default(),
        Arc::default(),
        Arc::default(),
    ));
    // Shape of the functions; a ToolCallError carries no prelude frames.
    let r = h
        .ok("try { await tools.echo(1) } catch (e) { return [tools.echo.name, tools.echo.length, typeof tools.echo, e.stack, Object.keys(e), e instanceof ToolCallError] }")
        .await;
    assert_eq!(
        r,
        json!([
            "echo",
            1,
            "function",
            "",
            ["name", "toolName", "message"],
            true
        ])
    );
    // Calls started from a getter while arguments convert, and from a `then` getter a
    // program planted on Object.prototype while results settle (sync and in flight).
    let r = h
        .ok(r#"
            let thens = 0;
            Object.defineProperty(Object.prototype, "then", { configurable: true, get() {
                thens++;
                if (thens < 4) { tools.echo({ from: "then" }); tools.sleepy({ ms: 1 }); }
                return undefined;
            } });
            const args = { get inner() { tools.echo({ from: "getter" }); return 1; } };
            const r = await Promise.all([tools.echo(args), tools.sleepy({ ms: 5 }), tools.echo({ x: 2 })]);
            delete Object.prototype.then;
            return [r, thens > 0];
        "#)
        .await;
    assert_eq!(r, json!([[{"inner": 1}, 5, {"x": 2}], true]));
    // An unhandled rejection of a call in flight is logged without internal frames.
    h.add(test_tool("fails_later").execute(|_a, _e| async {
        tokio::time::sleep(Duration::from_millis(1)).await;
        Err(ToolError::new("it broke"))
    }));
    let v = h
        .run("tools.fails_later(); await new Promise(r => setTimeout(r, 30)); return 1")
        .await;
    assert_eq!(v["result"], 1, "{v:#}");
    assert_eq!(
        v["logs"],
        json!([{"level": "error", "text": "Unhandled promise rejection: [ToolCallError: it broke]"}]),
        "{v:#}"
    );
    // An uncaught failed call ends the run at the await where it surfaced (in flight and
    // failing at once alike), also when caught and thrown again after other awaits.
    for (code, at) in [
        ("const a = 1;\n  await tools.fails_later();", (2, 3)),
        ("const a = 1;\n  await tools.echo(1);", (2, 3)),
        (
            "let err;\ntry { await tools.echo(1) } catch (e) { err = e }\nawait tools.echo({});\nthrow err;",
            (2, 7),
        ),
        (
            "let err;\ntry { await tools.fails_later() } catch (e) { err = e }\nawait tools.echo({});\nthrow err;",
            (2, 7),
        ),
    ] {
        let e = h.err(code).await;
        assert_eq!(e["name"], "ToolCallError", "{e:#}");
        assert_eq!(
            (e["line"].clone(), e["column"].clone()),
            (json!(at.0), json!(at.1)),
            "{e:#}"
        );
    }
    // One the program made itself has no site: no position is invented.
    let e = h
        .err("await tools.echo({});\nthrow new ToolCallError('x', 'mine');")
        .await;
    assert_eq!(e["message"], "x: mine", "{e:#}");
    assert_eq!(e.get("line"), None, "{e:#}");
}

#[tokio::test]
async fn calls_whose_arguments_cannot_be_read_are_listed_and_counted() {
    let mut h = Harness::new(fast_limits().max_tool_calls(3));
    h.add(echo_tool());
    let v = h
        .run(r#"
            const out = [];
            for (const args of [{ get a() { throw new Error("no") } }, { s: Symbol() }, { x: 1 }, { y: 2 }]) {
                try { out.push(await tools.echo(args)) } catch (e) { out.push(e.message) }
            }
            return out;
        "#)
        .await;
    assert_eq!(
        v["result"],
        json!([
            "invalid arguments for echo: args.a: a getter threw: Error: no",
            "invalid arguments for echo: args.s: a Symbol is not JSON",
            {"x": 1},
            "this run reached its limit of 3 tool calls; no more calls can start"
        ]),
        "{v:#}"
    );
    let statuses: Vec<&Value> = v["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["status"])
        .collect();
    assert_eq!(
        statuses,
        [&json!("error"), &json!("error"), &json!("ok")],
        "{v:#}"
    );
    // A getter that starts a call while the arguments convert uses up the last one.
    let mut h = Harness::new(fast_limits().max_tool_calls(1));
    h.add(echo_tool());
    let v = h
        .run(
            r#"
            let inner;
            const args = { get a() { inner = tools.echo({ inner: 1 }); return 2; } };
            let outer;
            try { outer = await tools.echo(args) } catch (e) { outer = e.message }
            return [outer, await inner];
        "#,
        )
        .await;
    assert_eq!(
        v["result"],
        json!([
            "this run reached its limit of 1 tool calls; no more calls can start",
            {"inner": 1}
        ]),
        "{v:#}"
    );
    assert_eq!(v["calls"].as_array().map(Vec::len), Some(1), "{v:#}");
}

#[tokio::test]
async fn the_await_marks_never_touch_the_program_s_own_names() {
    let mut h = Harness::new(fast_limits());
    h.add(echo_tool());
    let r = h
        .ok("let __codemode_at = 5; await tools.echo({}); const __codemode_at_0 = 1; await 1; return [__codemode_at, __codemode_at_0, typeof __codemode_at_1]")
        .await;
    assert_eq!(r, json!([5, 1, "undefined"]));
    // A program's own `var` of that name does not hide where it waits.
    let e = h
        .err("var __codemode_at = 'x';\nawait tools.echo({});\nawait new Promise(() => {});")
        .await;
    assert_eq!(e["name"], "DeadlockError", "{e:#}");
    assert_eq!(
        (e["line"].clone(), e["column"].clone()),
        (json!(3), json!(1))
    );
}

#[tokio::test]
async fn the_program_s_state_object_cannot_be_turned_against_the_host() {
    let mut h = Harness::new(fast_limits());
    h.add(echo_tool());
    // A non-strict program reaches the state the host handed its function as
    // `arguments[0]`: it has no prototype, and its properties cannot become accessors (the
    // host reads them with no JavaScript running).
    let r = h
        .ok("const s = arguments[0]; const keys = Object.keys(s); let refused = 0; for (const k of keys) { try { Object.defineProperty(s, k, { get() { for (;;) {} } }); } catch (e) { refused++; } } try { delete s.at; } catch (e) {} return [arguments.length, Object.getPrototypeOf(s), keys, refused]")
        .await;
    assert_eq!(r, json!([1, null, ["at", "implicit", "exported"], 3]));
    // A mark it overwrote with nonsense only loses where the program waits.
    let e = h
        .err("const s = arguments[0];\nawait (s.at = 1e300, new Promise(() => {}));")
        .await;
    assert_eq!(e["name"], "DeadlockError", "{e:#}");
    assert_eq!(e["line"], json!(null), "{e:#}");
    // Frozen, the state keeps its values: the last expression is still the result.
    assert_eq!(h.ok("Object.freeze(arguments[0]); 5").await, json!(5));
}

#[tokio::test]
async fn calls_run_concurrently_bounded_by_max_in_flight() {
    let peak = Arc::new(AtomicUsize::new(0));
    let now = Arc::new(AtomicUsize::new(0));
    let cancelled = Arc::new(AtomicUsize::new(0));
    let mut h = Harness::new(fast_limits());
    h.add(sleeper("nap", peak.clone(), now.clone(), cancelled.clone()));
    let r = h
        .ok("const all = await Promise.all(Array.from({length: 50}, () => tools.nap({ms: 100}))); all.length")
        .await;
    assert_eq!(r, json!(50));
    // All at once, counted rather than timed (a loaded machine may take longer).
    assert_eq!(peak.load(Ordering::SeqCst), 50, "all 50 ran at once");

    let peak = Arc::new(AtomicUsize::new(0));
    let mut h = Harness::new(fast_limits().max_in_flight(3));
    h.add(sleeper("nap", peak.clone(), now.clone(), cancelled.clone()));
    let started = Instant::now();
    let v = h
        .run("const all = await Promise.all(Array.from({length: 9}, () => tools.nap({ms: 50}))); all.length")
        .await;
    assert_eq!(v["result"], 9);
    assert_eq!(
        peak.load(Ordering::SeqCst),
        3,
        "never more than max_in_flight at once"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(150),
        "the rest waited their turn"
    );
    assert_eq!(v["calls"].as_array().unwrap().len(), 9);
}

#[tokio::test]
async fn calls_in_flight_when_the_program_ends_are_cancelled_and_listed() {
    let peak = Arc::new(AtomicUsize::new(0));
    let now = Arc::new(AtomicUsize::new(0));
    let cancelled = Arc::new(AtomicUsize::new(0));
    let mut h = Harness::new(fast_limits());
    h.add(sleeper("nap", peak, now, cancelled.clone()));
    let v = h.run("tools.nap({ms: 10000}); tools.nap({ms: 10000}); await tools.nap({ms: 1}); return 'done'").await;
    assert_eq!(v["result"], "done");
    let statuses: Vec<&str> = v["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["cancelled", "cancelled", "ok"]);
    assert_eq!(
        cancelled.load(Ordering::SeqCst),
        2,
        "both executes observed their signal"
    );
    assert!(
        v["logs"].as_array().unwrap().is_empty(),
        "no unhandled rejection leaks: {v}"
    );
}

// Two threads: the run spins on one, the test cancels it from the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_run_code_stops_a_program_in_a_cpu_loop() {
    let started = Arc::new(tokio::sync::Notify::new());
    let mut h = Harness::new(Limits::default().timeout(Duration::from_secs(120)));
    let notify = started.clone();
    h.add(test_tool("started").execute(move |_args, _exec: Exec| {
        // Runs when the call starts (a call is polled once at once), so the program is
        // about to enter its loop when the test hears of it.
        notify.notify_one();
        async { Ok(Value::Null) }
    }));
    let signal = tokio_util::sync::CancellationToken::new();
    let run = tokio::spawn(h.registry.dispatch(codemode::Request::new(
        "run_code",
        json!({"code": "tools.started({}); while (true) {}"}),
        signal.clone(),
    )));
    started.notified().await;
    signal.cancel();
    let outcome = run.await.unwrap();
    let v = outcome.value().unwrap();
    // Stopped by the cancellation, not 120 s later by the timeout.
    assert_eq!(v["error"]["name"], "CancelledError", "{v:#}");
}

/// Loops whose turns spend milliseconds inside one built-in: the engine asks its interrupt
/// handler only every 10 000 calls, which for these is minutes after the deadline. A
/// stopped run's memory is refused, so the built-in fails at once and the loop reaches the
/// handler within milliseconds, also when it catches what the built-in threw.
const SLOW_BUILT_IN_LOOPS: [&str; 3] = [
    "const s = JSON.stringify(Array.from({length: 60000}, (_, i) => ({i, name: 'item' + i})));\nfor (;;) JSON.parse(s);",
    "const s = JSON.stringify(Array.from({length: 60000}, (_, i) => ({i, name: 'item' + i})));\nfor (;;) { try { JSON.parse(s) } catch {} }",
    "let o = [];\nfor (let i = 0; i < 100000; i++) o = [o];\nfor (;;) { try { JSON.stringify(o) } catch {} }",
];

#[tokio::test]
async fn a_loop_over_slow_built_ins_stops_at_its_deadline() {
    let h = Harness::new(Limits::default().timeout(Duration::from_millis(300)));
    for code in SLOW_BUILT_IN_LOOPS {
        let started = Instant::now();
        let e = h.err(code).await;
        assert_eq!(e["name"], "TimeoutError", "{code}: {e:#}");
        // Without the refusal, each of these runs for minutes (the check comes every
        // 10 000 turns); a minute is a bound no loaded machine comes near.
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{code}: stopped after {:?}",
            started.elapsed()
        );
        // The engine's memory works again for the next run.
        assert_eq!(h.ok("return JSON.parse('[1, 2]')").await, json!([1, 2]));
    }
}

// Two threads: the run spins on one, the test cancels it from the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_run_code_stops_a_loop_over_slow_built_ins() {
    let started = Arc::new(tokio::sync::Notify::new());
    let mut h = Harness::new(Limits::default().timeout(Duration::from_secs(600)));
    let notify = started.clone();
    h.add(test_tool("started").execute(move |_args, _exec: Exec| {
        notify.notify_one();
        async { Ok(Value::Null) }
    }));
    for code in SLOW_BUILT_IN_LOOPS {
        let signal = tokio_util::sync::CancellationToken::new();
        let run = tokio::spawn(h.registry.dispatch(codemode::Request::new(
            "run_code",
            json!({"code": format!("tools.started({{}});\n{code}")}),
            signal.clone(),
        )));
        started.notified().await;
        let cancelled = Instant::now();
        signal.cancel();
        let outcome = run.await.unwrap();
        let v = outcome.value().unwrap();
        assert_eq!(v["error"]["name"], "CancelledError", "{code}: {v:#}");
        assert!(
            cancelled.elapsed() < Duration::from_secs(60),
            "{code}: stopped after {:?}",
            cancelled.elapsed()
        );
    }
}

#[tokio::test]
async fn the_limits_on_source_input_and_output_bytes_hold() {
    let mut h = Harness::new(
        fast_limits()
            .max_source_bytes(100)
            .max_tool_input_bytes(50)
            .max_tool_output_bytes(40),
    );
    h.add(echo_tool());
    let e = h.err(&format!("return '{}'", "x".repeat(200))).await;
    assert_eq!(
        e,
        json!({"name": "LimitError", "message": "the program is 209 bytes; the limit is 100 bytes"})
    );
    let r = h
        .ok("try { await tools.echo({s: 'y'.repeat(60)}) } catch (e) { return e.message }")
        .await;
    assert_eq!(
        r,
        "invalid arguments for echo: args.s: the value is larger than the tool input limit of 50 bytes"
    );
    let r = h
        .ok("try { await tools.echo({s: 'z'.repeat(40)}) } catch (e) { return e.message }")
        .await;
    assert_eq!(
        r,
        "the result of echo is 48 bytes, over the limit of 40 bytes for one tool result"
    );
}

#[test]
fn the_watchdog_stops_work_neither_other_guard_can_see() {
    // Timed against the deadline: no CPU-heavy test runs meanwhile.
    let _heavy = crate::support::heavy();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            // Converting a big result runs in the host, outside JavaScript (no interrupt
            // handler) and without waiting (no host-side bound): only the watchdog's flag
            // stops it. The result shares its halves: 2^41 numbers to convert in a few
            // kilobytes of engine memory, more than any build converts before its deadline
            // (and nothing big for the engine to free afterwards).
            let h = Harness::new(Limits::default().timeout(Duration::from_millis(150)));
            let started = Instant::now();
            let e = h
                .err("let a = [1.5, 2.5]; for (let i = 0; i < 40; i++) a = [a, a]; return a")
                .await;
            assert_eq!(e["name"], "TimeoutError");
            assert!(
                started.elapsed() < Duration::from_millis(150 + 100),
                "{:?}",
                started.elapsed()
            );
        });
}

#[tokio::test]
async fn export_default_runs_as_in_a_module() {
    let h = Harness::new(fast_limits());
    // A line break after `export default` (or between its words) does not end the
    // statement: the value is still the result.
    assert_eq!(h.ok("export default\n42").await, json!(42));
    assert_eq!(h.ok("export\ndefault 43").await, json!(43));
    // A named declaration stays a declaration: its name is bound, and the statements after
    // the export run before the exported function is called.
    assert_eq!(
        h.ok("export default function f() { return 3 } f()").await,
        json!(3)
    );
    let v = h
        .run("export default function f() { return 2 }\nconsole.log('after')")
        .await;
    assert_eq!(v["result"], json!(2), "{v:#}");
    assert_eq!(v["logs"][0]["text"], "after", "{v:#}");
    let v = h.run("export default 1\nconsole.log('runs')\n7").await;
    assert_eq!(v["result"], json!(1), "{v:#}");
    assert_eq!(v["logs"][0]["text"], "runs", "{v:#}");
    // Anonymous declarations are values; awaits in the value are awaited and marked.
    assert_eq!(
        h.ok("export default function () { return 'anon' }\n(1)")
            .await,
        json!("anon")
    );
    assert_eq!(
        h.ok("export default await Promise.resolve(5)").await,
        json!(5)
    );
    // TypeScript: an exported interface is no value (the last expression is the result),
    // and overloads before the exported function are types.
    assert_eq!(
        h.ok("export default interface I { a: number }; 9").await,
        json!(9)
    );
    assert_eq!(
        h.ok("export default function f(a: string): number;\nexport default function f(a: any) { return 8 }")
            .await,
        json!(8)
    );
    // A class is not called (that needs `new`): it is an explicit result that is not JSON.
    for program in [
        "export default class A {}",
        "export default class { static x = 1 }",
    ] {
        let e = h.err(program).await;
        assert_eq!(e["name"], "ResultError", "{program}: {e:#}");
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .ends_with("result: a class is not JSON (pass plain data, such as the fields of an object made with `new`)"),
            "{program}: {e:#}"
        );
    }
    // What a class is comes from the original `Function.prototype.toString`: a program
    // that replaces it changes neither the call nor the message.
    let lie = "Function.prototype.toString = function () { return 'function f() {}' };\n";
    let e = h.err(&format!("{lie}export default class A {{}}")).await;
    assert_eq!(e["name"], "ResultError", "{e:#}");
    assert!(
        e["message"].as_str().unwrap().ends_with("result: a class is not JSON (pass plain data, such as the fields of an object made with `new`)"),
        "{e:#}"
    );
    let e = h.err(&format!("{lie}return [class {{}}]")).await;
    assert!(
        e["message"].as_str().unwrap().ends_with("result[0]: a class is not JSON (pass plain data, such as the fields of an object made with `new`)"),
        "{e:#}"
    );
    let claim = "Function.prototype.toString = function () { return 'class A {}' };\n";
    assert_eq!(
        h.ok(&format!("{claim}export default () => 6")).await,
        json!(6)
    );
    let e = h.err(&format!("{claim}return [() => 1]")).await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .ends_with("result[0]: a function is not JSON (call it and pass its result)"),
        "{e:#}"
    );
    // A function whose source merely starts with the letters `class` is called.
    assert_eq!(h.ok("export default classes => 5").await, json!(5));
    assert_eq!(
        h.ok("const o = { classify() { return 1 } }\nexport default o.classify")
            .await,
        json!(1)
    );
    // An anonymous default is named `default`, as in a module.
    let v = h
        .run("export default () => { console.log(new Error('e').stack.split('\\n')[0].trim()); return 1 }")
        .await;
    assert_eq!(
        v["logs"][0]["text"], "at default (program.js:1:40)",
        "{v:#}"
    );
    // Only the exported value is called: a function the program returns otherwise is not.
    let e = h.err("export default 1\nreturn () => 5").await;
    assert_eq!(e["name"], "ResultError", "{e:#}");
    // A function the program calls itself is not called again when it ends.
    let v = h
        .run("export default async function main() { console.log('ran'); return 2 }\nawait main()")
        .await;
    assert_eq!(v["result"], json!(2), "{v:#}");
    assert_eq!(v["logs"].as_array().unwrap().len(), 1, "{v:#}");
    // Only calls that run as the program runs count: not a mention in a type, a property
    // name or a function never called, but a class's static block does.
    for program in [
        "const g = () => f();\nexport default function f() { console.log('f ran'); return 1 }",
        "interface Opts { f: number }\nexport default function f() { console.log('f ran'); return 1 }",
    ] {
        let v = h.run(program).await;
        assert_eq!(v["result"], json!(1), "{program}: {v:#}");
        assert_eq!(v["logs"].as_array().unwrap().len(), 1, "{program}: {v:#}");
    }
    let v = h
        .run("class K { static { f() } }\nexport default function f() { console.log('f ran'); return 1 }")
        .await;
    assert_eq!(v["logs"].as_array().unwrap().len(), 1, "{v:#}");
    // Calls from its own body or from other functions do not count.
    assert_eq!(
        h.ok("export default function fact(n = 5) { return n ? n * fact(n - 1) : 1 }")
            .await,
        json!(120)
    );
    assert_eq!(
        h.ok("export default function f() { return 1 }\nfunction g() { return f() }")
            .await,
        json!(1)
    );
    // One default export (types aside), as in a module, also when the program calls it.
    for program in [
        "export default 1\nexport default 2",
        "export default function f() { return 1 }\nexport default 2\nf()",
    ] {
        let e = h.err(program).await;
        assert_eq!(e["name"], "SyntaxError", "{program}: {e:#}");
        assert_eq!((&e["line"], &e["column"]), (&json!(2), &json!(1)), "{e:#}");
    }
    // A method named `class` is no class.
    assert_eq!(
        h.ok("export default ({ class () { return 'method' } }).class")
            .await,
        json!("method")
    );
    // An error in the exported value is placed at the value.
    let e = h.err("const a = 1;   export default null.x").await;
    assert_eq!((&e["line"], &e["column"]), (&json!(1), &json!(31)), "{e:#}");
    // `export {}` and local `export { a }` export nothing the result needs; an exported
    // `async function main()` is called like a plain one.
    assert_eq!(h.ok("export {}\nconst x = 1\nx + 1").await, json!(2));
    assert_eq!(h.ok("const a = 1; export { a }; a + 1").await, json!(2));
    let e = h.err("const a = 1; export { a as default }").await;
    assert_eq!(e["name"], "SyntaxError", "{e:#}");
    assert_eq!(
        h.ok("export async function main() { return 2 }").await,
        json!(2)
    );
    assert_eq!(
        h.ok("async function main() { return 3 }\nexport { main };")
            .await,
        json!(3)
    );
    let e = h.err("export function helper() { return 1 }").await;
    assert_eq!(e["name"], "ProgramError", "{e:#}");
    // A byte order mark before a hashbang line.
    assert_eq!(
        h.ok("\u{FEFF}#!/usr/bin/env node\nexport default 1").await,
        json!(1)
    );
    // An error after the export keeps its position in the model's text.
    let e = h
        .err("export default\n  await Promise.resolve(1);\nnull.x")
        .await;
    assert_eq!(e["name"], "TypeError", "{e:#}");
    assert_eq!((&e["line"], &e["column"]), (&json!(3), &json!(1)), "{e:#}");
}

#[tokio::test]
async fn html_like_comments_before_the_result_are_comments() {
    // ECMAScript Annex B.1.1: in a script, `<!--` starts a comment anywhere and `-->` at
    // the start of a line. The inserted `return` and await marks go after them.
    let h = Harness::new(fast_limits());
    for (program, result) in [
        ("<!-- c\n1+1", json!(2)),
        ("const a = 1\n--> c\na+1", json!(2)),
        ("const a = 2\n  /* x */ --> c\na*3", json!(6)),
        ("let x = 1 <!-- x\nx", json!(1)),
        ("/* a */ <!-- b\n/* c */ 6", json!(6)),
        ("<!-- c\nawait Promise.resolve(3)", json!(3)),
        ("const r = await <!-- c\n Promise.resolve(4); r", json!(4)),
        // U+FEFF is white space to JavaScript.
        ("let x = 1;\n<!-- a\n\u{FEFF}<!-- b\nx", json!(1)),
        ("let x = 1;\n<!-- a\n\u{FEFF}--> b\nx", json!(1)),
    ] {
        assert_eq!(h.ok(program).await, result, "{program}");
    }
    // An await after such a comment is reported where it is, as written.
    let e = h
        .err("const p = new Promise(() => {})\n<!-- x\nawait <!-- c\n--> d\np")
        .await;
    assert_eq!(e["name"], "DeadlockError", "{e:#}");
    assert_eq!((&e["line"], &e["column"]), (&json!(3), &json!(1)), "{e:#}");
    assert!(
        e["message"].as_str().unwrap().contains("`await p`"),
        "{e:#}"
    );
}

#[tokio::test]
async fn program_forms_a_model_writes() {
    let h = Harness::new(fast_limits());
    assert_eq!(
        h.ok("```ts\nconst x: number = 2;\nx * 3\n```").await,
        json!(6)
    );
    assert_eq!(
        h.ok("```\nreturn 'plain fence'\n```").await,
        json!("plain fence")
    );
    assert_eq!(
        h.ok("Here is the program:\n\n```javascript\nconst a = [1, 2, 3];\na.length\n```\n\nIt counts the items.").await,
        json!(3)
    );
    assert_eq!(
        h.ok("export default async () => 'exported arrow'").await,
        json!("exported arrow")
    );
    assert_eq!(
        h.ok("export default async function run() { return 7 }")
            .await,
        json!(7)
    );
    assert_eq!(
        h.ok("(async () => { return 'iife' })()").await,
        json!("iife")
    );
    assert_eq!(
        h.ok("async function main() { return 'main ran' }").await,
        json!("main ran")
    );
    let e = h.err("function helper() { return 1 }").await;
    assert_eq!(
        e["message"],
        "the program only declares helper() and never calls anything, so nothing would run; call it, e.g. `return await helper()`"
    );
    // A `using` declaration runs: its value is disposed of when the program ends.
    assert_eq!(
        h.run("using r = { [Symbol.dispose]() { console.log('disposed') } };\nfunction f() { return 1 }")
            .await["logs"][0]["text"],
        "disposed"
    );
    // Nothing is imported but types, however it is written.
    for (program, column, what) in [
        ("const a = 1;\nimport fs from 'fs'", 1, "import"),
        ("const a = 1;\n  import fs = require('fs');", 3, "import"),
        ("const a = 1;\nexport import x = N.y;", 1, "import"),
        (
            "const a = 1;\nconst m = await import('fs');",
            17,
            "import()",
        ),
        (
            "const a = 1;\nconsole.log(import.meta.url)",
            13,
            "import.meta",
        ),
    ] {
        let e = h.err(program).await;
        assert_eq!(e["name"], "SyntaxError", "{program}: {e}");
        assert_eq!(
            e["message"],
            format!(
                "`{what}` is not available: a program runs alone, without modules; call tools through `tools.<name>(args)`"
            ),
            "{program}"
        );
        assert_eq!(
            (&e["line"], &e["column"]),
            (&json!(2), &json!(column)),
            "{program}"
        );
    }
    assert_eq!(
        h.ok("5;\nimport type T = require('t');\nimport type { U } from 'u';")
            .await,
        json!(5)
    );
    let e = h
        .err("const a = 1;\nnamespace N { export const x = 1 }")
        .await;
    assert_eq!(e["name"], "SyntaxError");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("TypeScript `namespace` is not supported"),
        "{e}"
    );
    assert_eq!(
        (e["line"].clone(), e["column"].clone()),
        (json!(2), json!(1))
    );
}

/// Issue 15, item 6: the parser's mode is the engine's. A program is the body of a sloppy
/// async function (Annex B syntax parses and runs as the engine runs it); a program that
/// parses only as a module is strict in both.
#[tokio::test]
async fn programs_run_in_the_mode_they_parse_in() {
    let h = Harness::new(fast_limits());
    // Sloppy: `with`, a legacy octal literal, `let`, `yield` and `await` as names where a
    // sloppy function allows them, an assignment to an undeclared name, `this` unbound.
    assert_eq!(
        h.ok("const o = { a: 2 };\nwith (o) { return a * 3 }").await,
        json!(6)
    );
    assert_eq!(
        h.ok("const n = 010;\n[n, 08, 09.5]").await,
        json!([8, 8, 9.5])
    );
    // TypeScript refuses both: with types, a clear error where it is.
    let e = h.err("const n: number = 010;\nn").await;
    assert_eq!(
        (e["name"].as_str(), e["line"].clone(), e["column"].clone()),
        (Some("SyntaxError"), json!(1), json!(19)),
        "{e}"
    );
    assert!(
        e["message"].as_str().unwrap().ends_with(
            "(TypeScript refuses it: a program that uses it must be JavaScript, without types)"
        ),
        "{e}"
    );
    assert_eq!(h.ok("var let = 4, yield = 5;\nlet + yield").await, json!(9));
    assert_eq!(
        h.ok("function f() { var await = 3; return await; }\nreturn f()")
            .await,
        json!(3)
    );
    assert_eq!(h.ok("undeclared = 7;\nundeclared").await, json!(7));
    assert_eq!(
        h.ok("return (function () { return this === undefined })()")
            .await,
        json!(false)
    );
    // A directive makes the program strict in both: the parser refuses what the engine would.
    let e = h.err("'use strict';\nconst n = 010;").await;
    assert_eq!(
        (e["name"].as_str(), e["line"].clone(), e["column"].clone()),
        (Some("SyntaxError"), json!(2), json!(11)),
        "{e}"
    );
    // Module form (`export`, `import type`): strict when parsed and when run.
    assert_eq!(
        h.ok("export default (function () { return this === undefined })()")
            .await,
        json!(true)
    );
    let e = h
        .err("import type { X } from './x';\nundeclared = 7;\nexport default undeclared")
        .await;
    assert_eq!(
        (e["name"].as_str(), e["line"].clone()),
        (Some("ReferenceError"), json!(2)),
        "{e}"
    );
    let e = h
        .err("const o = { a: 1 };\nwith (o) { a }\nexport default 1")
        .await;
    assert_eq!(
        (e["name"].as_str(), e["line"].clone(), e["column"].clone()),
        (Some("SyntaxError"), json!(2), json!(1)),
        "{e}"
    );
    // Positions on the first line stay the model's after the directive: the same as the
    // sloppy program with that line reports.
    let strict = h
        .err("export const a: number = 1; (null as any).x; export default a")
        .await;
    let sloppy = h
        .err("       const a: number = 1; (null as any).x; return         a")
        .await;
    assert_eq!(strict["name"], "TypeError", "{strict}");
    assert_eq!(
        (&strict["line"], &strict["column"]),
        (&sloppy["line"], &sloppy["column"])
    );
    assert_eq!(strict["line"], 1);
    // Syntax errors keep their positions in both parses; a stray `}` is reported where it is.
    let e = h.err("const a = 1;\nreturn a }\nconst b = 2;").await;
    assert_eq!(
        (e["name"].as_str(), e["line"].clone(), e["column"].clone()),
        (Some("SyntaxError"), json!(2), json!(10)),
        "{e}"
    );
    let e = h.err("}; (async function () {").await;
    assert_eq!(
        (e["name"].as_str(), e["line"].clone(), e["column"].clone()),
        (Some("SyntaxError"), json!(1), json!(1)),
        "{e}"
    );
    let e = h.err("with ({}) {}\nconst x = ;").await;
    assert_eq!(
        (e["name"].as_str(), e["line"].clone(), e["column"].clone()),
        (Some("SyntaxError"), json!(2), json!(11)),
        "{e}"
    );
}

#[tokio::test]
async fn nothing_survives_between_runs() {
    let h = Harness::new(fast_limits());
    assert_eq!(
        h.ok("globalThis.leftover = 42; Object.prototype.polluted = 1; leftover")
            .await,
        json!(42)
    );
    assert_eq!(
        h.ok("[typeof leftover, typeof ({}).polluted]").await,
        json!(["undefined", "undefined"])
    );
}

#[tokio::test]
async fn the_rejection_tracker_is_out_of_the_program_s_reach() {
    let h = Harness::new(fast_limits());
    // No name the host uses to talk to the prelude is a global.
    assert_eq!(
        h.ok("[typeof __codemode_rejection, typeof trackRejection, typeof host, typeof internals, Object.getOwnPropertyNames(globalThis).filter(n => n.startsWith('__codemode'))]")
            .await,
        json!(["undefined", "undefined", "undefined", "undefined", []])
    );
    // Defining those names, or replacing `Promise` and `Map`, leaves the reporting of
    // unhandled rejections as it was.
    let v = h
        .run(
            "globalThis.__codemode_rejection = () => {};
             globalThis.trackRejection = () => {};
             Promise.reject('lost');
             globalThis.Promise = function () {};
             globalThis.Map = function () {};
             return 1",
        )
        .await;
    assert_eq!(v["result"], 1, "{v:#}");
    assert_eq!(
        v["logs"],
        json!([{"level": "error", "text": "Unhandled promise rejection: 'lost'"}]),
        "{v:#}"
    );
}

/// A promise rejected close to the engine's stack limit is still reported, once, in
/// order; one handled at once is never reported (found by a hostile review, when the
/// tracker was JavaScript: rejections a few frames above the bottom were lost, and a
/// `.catch` attached there went unseen, so a handled promise was reported).
#[tokio::test]
async fn rejections_near_the_stack_limit_are_reported_once_and_in_order() {
    let h = Harness::new(fast_limits());
    // At k frames above the bottom of a recursion: a promise rejected and left, and one
    // rejected and handled at once. Either may fail to be made that close to the limit
    // (a RangeError): the program records, with plain assignments, which were made.
    let v = h
        .run(
            "const made = Array(2000).fill(0), handled = Array(2000).fill(0);
             // Extra arguments under the recursion shift where its frames fall.
             for (let pad = 0; pad < 8; pad++) {
               for (let k = 1; k <= 12; k++) {
                 const id = pad * 100 + k;
                 let bottom, done = false;
                 function deep(n) {
                   try { deep(n + 1) } catch { if (bottom === undefined) bottom = n; return }
                   if (!done && n === bottom - k) {
                     done = true;
                     made[id] = 1;
                     try { Promise.reject(id) } catch { made[id] = 0 }
                     try { const q = Promise.reject(-id); q.catch(() => {}); handled[id] = 1 } catch {}
                   }
                 }
                 const start = new Function(...Array.from({ length: pad }, (_, j) => 'a' + j), 'f', 'return f(0)');
                 start(...Array(pad).fill(0), deep);
               }
             }
             return [made, handled]",
        )
        .await;
    let flags = |i: usize| -> Vec<i64> {
        v["result"][i]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .filter(|(_, f)| f.as_i64() == Some(1))
            .map(|(k, _)| k as i64)
            .collect()
    };
    let (made, handled) = (flags(0), flags(1));
    // Most are made even a few frames above the bottom.
    assert!(
        made.len() >= 60 && handled.len() >= 60,
        "{} {} {v:#}",
        made.len(),
        handled.len()
    );
    let reported: Vec<i64> = v["logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let text = l["text"].as_str().unwrap();
            text.strip_prefix("Unhandled promise rejection: ")
                .unwrap_or_else(|| panic!("{text}"))
                .parse()
                .unwrap()
        })
        .collect();
    // Each one left is reported once, in order; none that was handled.
    let left: Vec<i64> = reported.iter().copied().filter(|&k| k > 0).collect();
    assert_eq!(left, made, "{v:#}");
    assert!(
        reported.iter().all(|&k| k > 0 || !handled.contains(&-k)),
        "{v:#}"
    );
}

/// Rejections a handler takes later, in any order, are forgotten, however many there are;
/// those left are reported in the order they were rejected.
#[tokio::test]
async fn rejections_handled_later_are_forgotten_and_the_rest_reported_in_order() {
    let h = Harness::new(fast_limits());
    let v = h
        .run(
            "const ps = [];
             for (let i = 0; i < 50000; i++) ps.push(Promise.reject(i));
             await null;
             for (let i = 0; i < 50000; i++) if (i % 10000 !== 7) ps[i].catch(() => {});
             Promise.reject('last');
             return 1",
        )
        .await;
    assert_eq!(v["result"], 1, "{v:#}");
    let texts: Vec<&str> = v["logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["text"].as_str().unwrap())
        .collect();
    // A reason with a lone surrogate is shown with U+FFFD, as `console.log` shows it
    // (found by a hostile review: the whole line was replaced by a notice).
    let v = h
        .run("Promise.reject('bad \\uD800 reason'); return 1")
        .await;
    assert_eq!(
        v["logs"],
        json!([{"level": "error", "text": "Unhandled promise rejection: 'bad \u{FFFD} reason'"}]),
        "{v:#}"
    );
    assert_eq!(
        texts,
        [
            "Unhandled promise rejection: 7",
            "Unhandled promise rejection: 10007",
            "Unhandled promise rejection: 20007",
            "Unhandled promise rejection: 30007",
            "Unhandled promise rejection: 40007",
            "Unhandled promise rejection: 'last'",
        ],
        "{v:#}"
    );
}

/// The timers' table loads at the first timer call, with the built-ins captured before the
/// program ran: replacing them first changes nothing, and clearing a timer before any was
/// set is a no-op.
#[tokio::test]
async fn timers_load_on_first_use_with_the_original_built_ins() {
    let h = Harness::new(fast_limits());
    let v = h
        .ok(r#"
globalThis.Number = () => { throw 1 };
Object.create = () => { throw 2 };
globalThis.TypeError = function () { return { fake: true } };
Reflect.apply = () => { throw 3 };
clearTimeout(99);
let bad;
try { setTimeout(5) } catch (e) { bad = [e instanceof Error, e.message] }
const order = [];
setTimeout((a, b) => order.push(a + b), 5, 1, 2);
const i = setInterval(() => { order.push("i"); clearInterval(i) }, "1");
await new Promise((r) => setTimeout(r, 40));
return [bad, order]"#)
        .await;
    assert_eq!(
        v,
        json!([[true, "the callback must be a function"], ["i", 3]])
    );
    // An id that names a timer as a property key clears it (found by a hostile review: the
    // host was handed the id as given, and refused it with the engine's conversion text).
    let v = h
        .ok(r#"
const fired = [];
const ids = [0, 1, 2, 3].map((i) => setTimeout(() => fired.push(i), 5));
clearTimeout(String(ids[0]));
clearTimeout({ toString() { return String(ids[1]) } });
clearInterval([ids[2]]);
clearTimeout("no such timer");
await new Promise((r) => setTimeout(r, 30));
return fired"#)
        .await;
    assert_eq!(v, json!([3]));
}

#[tokio::test]
async fn timers_work_and_are_bounded_by_the_deadline() {
    let h = Harness::new(fast_limits());
    let r = h
        .ok("const order = []; const t = setTimeout(() => order.push('cancelled'), 10); clearTimeout(t); setTimeout(() => order.push('b'), 20); setTimeout(() => order.push('a'), 5); await new Promise((r) => setTimeout(r, 40)); let n = 0; await new Promise((r) => { const i = setInterval(() => { n++; if (n === 3) { clearInterval(i); r() } }, 1) }); await new Promise((r) => setTimeout(r, 30)); [order, n]")
        .await;
    assert_eq!(r, json!([["a", "b"], 3]));
    let h = Harness::new(Limits::default().timeout(Duration::from_millis(200)));
    let started = Instant::now();
    let e = h
        .err("await new Promise((r) => setTimeout(r, 60000))")
        .await;
    assert_eq!(e["name"], "TimeoutError");
    assert!(started.elapsed() < Duration::from_millis(400));
}

/// Issue 16, item 4: the engine's stack limit never exceeds what the thread running it has
/// left, so deep recursion on a small thread is a catchable `RangeError`, never a crash of
/// the host (a thread too small for any engine is refused: unit-tested in `sandbox::stack`,
/// as no thread that small can be made here).
#[test]
fn the_engine_stack_fits_the_thread_it_runs_on() {
    let run_on = |stack: usize, code: &'static str| {
        std::thread::Builder::new()
            .stack_size(stack)
            .spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on(async { Harness::new(fast_limits()).run(code).await })
            })
            .unwrap()
            .join()
            .unwrap()
    };
    let deep = "function d(n) { return n === 0 ? 0 : 1 + d(n - 1) }\ntry { d(1e7) } catch (e) { return [e.name, d(500)] }";
    // 8 MiB asked for, 1.5 MiB of thread: the limit shrinks to fit.
    let v = run_on(3 << 19, deep);
    assert_eq!(v["result"], json!(["RangeError", 500]), "{v:#}");
    // The full default on a thread of `Limits::thread_stack`.
    let v = run_on(
        Limits::default().thread_stack(),
        "function d(n) { return n === 0 ? 0 : 1 + d(n - 1) }\nreturn d(10000)",
    );
    assert_eq!(v["result"], 10000, "{v:#}");
}

/// Waits until the pool has built `n` engines in all and one is ready (the builder runs on
/// its own thread).
async fn built(pool: &EnginePool, n: u64) {
    let until = Instant::now() + Duration::from_secs(30);
    while pool.stats().built < n || pool.stats().idle == 0 {
        assert!(Instant::now() < until, "the pool built no engine: {pool:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn warm_engines_serve_one_run_each_and_nothing_survives_between_runs() {
    let pool = EnginePool::new(1);
    let mut h = Harness::with_config(
        RunCodeConfig::default()
            .limits(fast_limits())
            .engine_pool(pool.clone()),
    );
    h.add(echo_tool());
    // The first run says which tools to build for: it starts its own engine.
    let v = h
        .run(
            "globalThis.leftover = 42; Object.prototype.polluted = 1; Array.prototype.map = null;
             setTimeout(() => console.log('late timer'), 30);
             return (await tools.echo({n: 1})).n",
        )
        .await;
    assert_eq!(v["result"], 1, "{v:#}");
    // The run ended with its result: its pending timer never fired.
    assert_eq!(v["logs"], json!([]), "{v:#}");
    assert_eq!(pool.stats().cold, 1);
    built(&pool, 1).await;
    tokio::time::sleep(Duration::from_millis(60)).await;
    // The second takes the engine built meanwhile: none of the first run's changes, no
    // timer of it, and its tools work.
    let v = h
        .run(
            "const late = await new Promise(r => setTimeout(() => r('own timer'), 50));
             return [typeof leftover, typeof ({}).polluted, typeof [].map, (await tools.echo({n: 2})).n, late]",
        )
        .await;
    assert_eq!(
        v["result"],
        json!(["undefined", "undefined", "function", 2, "own timer"]),
        "{v:#}"
    );
    assert_eq!(v["logs"], json!([]), "{v:#}");
    assert_eq!(
        v["calls"],
        json!([{"tool": "echo", "status": "ok", "ms": v["calls"][0]["ms"]}])
    );
    let stats = pool.stats();
    assert_eq!((stats.warm, stats.cold), (1, 1), "{stats:?}");
    // Each warm engine serves one run: a third run takes a second engine, never the first.
    built(&pool, 2).await;
    assert_eq!(
        h.ok("globalThis.x = (globalThis.x ?? 0) + 1; return x")
            .await,
        json!(1)
    );
    built(&pool, 3).await;
    assert_eq!(
        h.ok("globalThis.x = (globalThis.x ?? 0) + 1; return x")
            .await,
        json!(1)
    );
    assert_eq!(pool.stats().warm, 3);
    built(&pool, 4).await;

    // Another tool set: the idle engine was built for the old one, so this run starts its
    // own, and the pool builds for the new set.
    h.add(test_tool("extra").returns(json!("extra")));
    assert_eq!(h.ok("return await tools.extra({})").await, json!("extra"));
    let stats = pool.stats();
    assert_eq!(
        (stats.warm, stats.cold, stats.discarded),
        (3, 2, 1),
        "{stats:?}"
    );
    built(&pool, 5).await;
    assert_eq!(h.ok("return await tools.extra({})").await, json!("extra"));
    assert_eq!(pool.stats().warm, 4);
}

#[tokio::test]
async fn a_warm_engine_keeps_the_run_s_limits() {
    let pool = EnginePool::new(1);
    let limits = Limits::default()
        .timeout(Duration::from_millis(300))
        .memory(8 << 20);
    let h = Harness::with_config(
        RunCodeConfig::default()
            .limits(limits)
            .engine_pool(pool.clone()),
    );
    assert_eq!(h.ok("return 1").await, json!(1));
    // The timeout counts from the run, not from when the engine was built.
    built(&pool, 1).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    // The performance clock starts with the run too: it does not tell how long the engine
    // waited (found by a hostile helper).
    assert_eq!(
        h.ok("return [performance.now() < 200, Math.abs(performance.timeOrigin - Date.now()) < 200, 2]")
            .await,
        json!([true, true, 2])
    );
    built(&pool, 2).await;
    let started = Instant::now();
    let e = h.err("while (true) {}").await;
    assert_eq!(e["name"], "TimeoutError", "{e:#}");
    assert!(e["message"].as_str().unwrap().contains("300 ms"), "{e:#}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // The memory limit, fatal even when caught.
    built(&pool, 3).await;
    let e = h
        .err("try { const a = []; while (true) a.push('x'.repeat(1000) + a.length) } catch (e) {} return 1")
        .await;
    assert_eq!(e["name"], "OutOfMemory", "{e:#}");
    assert!(
        e["message"].as_str().unwrap().contains("8388608 bytes"),
        "{e:#}"
    );
    // The stack limit of the thread the run is on: a runaway recursion is a RangeError.
    built(&pool, 4).await;
    assert_eq!(
        h.ok("function f(n) { return f(n + 1) + 1 } try { f(0) } catch (e) { return [e instanceof RangeError, e.message] }")
            .await,
        json!([true, "Maximum call stack size exceeded"])
    );
    assert_eq!(pool.stats().warm, 4);
}

#[tokio::test]
async fn a_warm_engine_run_can_be_cancelled() {
    let pool = EnginePool::new(2);
    let h = Harness::with_config(
        RunCodeConfig::default()
            .limits(fast_limits())
            .engine_pool(pool.clone()),
    );
    assert_eq!(h.ok("return 1").await, json!(1));
    built(&pool, 2).await;
    let signal = tokio_util::sync::CancellationToken::new();
    let cancel = signal.clone();
    // From another thread: the loop holds this test's only thread.
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        cancel.cancel();
    });
    let outcome = h
        .registry
        .dispatch(codemode::Request::new(
            "run_code",
            json!({"code": "while (true) {}"}),
            signal,
        ))
        .await;
    let v = outcome.into_result().unwrap();
    assert_eq!(v["error"]["name"], "CancelledError", "{v:#}");
    assert_eq!(pool.stats().warm, 1);
    // The next run is served as usual.
    assert_eq!(h.ok("return 2").await, json!(2));
}

/// Found by a hostile review: `import()` in code the program evaluates (where the check of
/// its text cannot see it) is refused too, whatever it names; the names the prelude's own
/// modules were loaded under included, which the engine would otherwise hand out.
#[tokio::test]
async fn import_in_evaluated_code_is_refused_whatever_it_names() {
    let h = Harness::new(fast_limits());
    let v = h
        .ok(r#"
console.log("the printer loads");
const names = ["codemode:prelude/prelude.js", "codemode:prelude/31_inspect.js", "x", "./y.js"];
const out = [];
for (const name of names) {
  try {
    await (0, eval)(`import(${JSON.stringify(name)})`);
    out.push("imported " + name);
  } catch (e) {
    out.push(String(e && e.message).includes("`import()` is not available") ? "refused" : "other: " + e);
  }
}
try {
  await new Function("return import('codemode:prelude/prelude.js')")();
  out.push("imported through Function");
} catch (e) {
  out.push(String(e && e.message).includes("`import()` is not available") ? "refused" : "other: " + e);
}
return out;
"#)
        .await;
    assert_eq!(
        v,
        json!(["refused", "refused", "refused", "refused", "refused"])
    );
}
