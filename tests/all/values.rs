//! Values across the boundary between programs and tools, through real programs and a real
//! tool.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use codemode::run_code::Limits;

use crate::support::{Harness, echo_tool, test_tool};

/// A harness with `echo` and `seen`, which records the arguments it received. The default
/// deadline: converting the big values here takes a while in a debug build.
fn harness() -> (Harness, Arc<Mutex<Vec<Value>>>) {
    let mut h = Harness::new(Limits::default());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    h.add(echo_tool());
    h.add(test_tool("seen").execute(move |args, _e| {
        let record = record.clone();
        async move {
            record.lock().unwrap().push((*args).clone());
            Ok(json!(true))
        }
    }));
    (h, seen)
}

/// The message of the ToolCallError a program gets for `call`.
async fn call_error(h: &Harness, call: &str) -> String {
    let code = format!(
        "try {{ await {call}; return 'no error' }} catch (e) {{ return [e.name, e.message] }}"
    );
    let r = h.ok(&code).await;
    assert_eq!(r[0], "ToolCallError", "{r}");
    r[1].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn key_order_is_kept_both_ways() {
    let (h, seen) = harness();
    h.ok("await tools.seen({zebra: 1, apple: 2, mango: {y: 1, x: 2}})")
        .await;
    let got = seen.lock().unwrap()[0].clone();
    let keys: Vec<&String> = got.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["zebra", "apple", "mango"]);
    assert_eq!(
        got["mango"].as_object().unwrap().keys().collect::<Vec<_>>(),
        ["y", "x"]
    );
    let r = h
        .ok("const r = await tools.echo({zebra: 1, apple: 2}); Object.keys(r)")
        .await;
    assert_eq!(r, json!(["zebra", "apple"]));
    // A NUL inside a key is part of the key, both ways.
    let r = h
        .ok("const r = await tools.echo({'a\\u0000b': 1}); Object.keys(r)[0] === 'a\\u0000b'")
        .await;
    assert_eq!(r, json!(true));
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn proto_and_constructor_are_ordinary_keys() {
    let (h, seen) = harness();
    h.ok("await tools.seen({['__proto__']: {polluted: true}, constructor: 'c'})")
        .await;
    assert_eq!(
        seen.lock().unwrap()[0],
        json!({"__proto__": {"polluted": true}, "constructor": "c"})
    );
    let r = h
        .ok("const r = await tools.echo({['__proto__']: {polluted: true}}); [Object.keys(r), r.polluted === undefined, Object.getPrototypeOf(r) === Object.prototype, ({}).polluted === undefined, r['__proto__'].polluted]")
        .await;
    assert_eq!(r, json!([["__proto__"], true, true, true, true]));
}

#[tokio::test]
async fn setters_on_prototypes_never_run_when_results_arrive() {
    let (h, _) = harness();
    let r = h
        .ok("let hits = 0; Object.defineProperty(Object.prototype, 'a', {set(v) { hits++ }, configurable: true}); Object.defineProperty(Array.prototype, '0', {set(v) { hits++ }, configurable: true}); const r = await tools.echo({a: 1, list: [5]}); [hits, r.a, r.list[0]]")
        .await;
    assert_eq!(r, json!([0, 1, 5]));
}

#[tokio::test]
async fn numbers_cross_losslessly() {
    let (h, seen) = harness();
    h.ok("await tools.seen({big: 2n ** 70n, neg: -(2n ** 64n) - 5n, safe: 9007199254740991, f: 0.1, i: 7.0, z: -0, e: 1e21})").await;
    let got = seen.lock().unwrap()[0].clone();
    assert_eq!(got["big"].to_string(), "1180591620717411303424");
    assert_eq!(got["neg"].to_string(), "-18446744073709551621");
    assert_eq!(got["safe"].to_string(), "9007199254740991");
    assert_eq!(got["f"].to_string(), "0.1");
    assert_eq!(got["i"].to_string(), "7");
    assert_eq!(got["z"].to_string(), "-0");
    assert_eq!(got["e"].to_string(), "1e+21", "as JSON.stringify writes it");
    let r = h
        .ok("const r = await tools.echo({a: 9007199254740993n, b: 9007199254740991, c: -0}); [typeof r.a, r.a === 9007199254740993n, typeof r.b, Object.is(r.c, -0)]")
        .await;
    assert_eq!(r, json!(["bigint", true, "number", true]));
}

#[tokio::test]
async fn values_that_are_not_json_are_refused_with_their_path() {
    let (h, seen) = harness();
    let cases = [
        (
            "tools.seen({a: NaN})",
            "invalid arguments for seen: args.a: NaN is not JSON (only finite numbers are)",
        ),
        (
            "tools.seen({a: [1, -Infinity]})",
            "invalid arguments for seen: args.a[1]: -Infinity is not JSON (only finite numbers are)",
        ),
        (
            "tools.seen({f() {}})",
            "invalid arguments for seen: args.f: a function is not JSON (call it and pass its result)",
        ),
        (
            "tools.seen({s: Symbol('x')})",
            "invalid arguments for seen: args.s: a Symbol is not JSON",
        ),
        (
            "tools.seen({a: [1, undefined]})",
            "invalid arguments for seen: args.a[1]: undefined is not JSON in an array (use null)",
        ),
        (
            "(() => { const o = {x: {}}; o.x.back = o; return tools.seen(o) })()",
            "invalid arguments for seen: args.x.back: the value is cyclic (it contains itself)",
        ),
        (
            "tools.seen({m: new Map([[1, 2]])})",
            "invalid arguments for seen: args.m: a Map is not JSON; convert it with Object.fromEntries(map) or [...map]",
        ),
        (
            "tools.seen({s: new Set([1])})",
            "invalid arguments for seen: args.s: a Set is not JSON; convert it with [...set]",
        ),
        (
            "tools.seen({t: new Uint8Array(2)})",
            "invalid arguments for seen: args.t: a typed array or DataView is not JSON; convert it with Array.from(view)",
        ),
        (
            "tools.seen({b: new ArrayBuffer(2)})",
            "invalid arguments for seen: args.b: an ArrayBuffer is not JSON; convert it with Array.from(new Uint8Array(buffer))",
        ),
        (
            "tools.seen({p: Promise.resolve(1)})",
            "invalid arguments for seen: args.p: a Promise is not JSON (await it first)",
        ),
        (
            "tools.seen({s: 'a\\uD800b'})",
            "invalid arguments for seen: args.s: the string contains a lone surrogate (half of a UTF-16 pair), which JSON text cannot carry; remove it or replace it with \\uFFFD",
        ),
        (
            "tools.seen({ok: 1, inner: {'\\uDC00': 1}})",
            "invalid arguments for seen: args.inner: a key contains a lone surrogate, which JSON text cannot carry",
        ),
    ];
    for (call, message) in cases {
        assert_eq!(call_error(&h, call).await, message, "for {call}");
    }
    assert!(
        seen.lock().unwrap().is_empty(),
        "no refused call reached the tool"
    );
}

#[tokio::test]
async fn undefined_members_are_dropped_and_to_json_is_honoured() {
    let (h, seen) = harness();
    h.ok("await tools.seen({a: undefined, b: 1, d: new Date(Date.UTC(2024, 1, 29, 12)), c: {toJSON() { return {custom: true} }}, n: {toJSON(key) { return key }}})").await;
    assert_eq!(
        seen.lock().unwrap()[0],
        json!({"b": 1, "d": "2024-02-29T12:00:00.000Z", "c": {"custom": true}, "n": "n"})
    );
}

#[tokio::test]
async fn a_throwing_getter_or_to_json_fails_that_call_only() {
    let (h, seen) = harness();
    let m = call_error(
        &h,
        "tools.seen({get x() { throw new Error('getter broke') }})",
    )
    .await;
    assert_eq!(
        m,
        "invalid arguments for seen: args.x: a getter threw: Error: getter broke"
    );
    let m = call_error(
        &h,
        "tools.seen({y: {toJSON() { throw new TypeError('no json') }}})",
    )
    .await;
    assert_eq!(
        m,
        "invalid arguments for seen: args.y: toJSON() threw: TypeError: no json"
    );
    let r = h
        .ok("try { await tools.seen({get x() { throw 1 }}) } catch {} return await tools.seen({fine: true})")
        .await;
    assert_eq!(r, json!(true));
    assert_eq!(*seen.lock().unwrap(), vec![json!({"fine": true})]);
}

#[tokio::test]
async fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let (h, _) = harness();
    let m = call_error(&h, "(() => { let a = []; for (let i = 0; i < 100000; i++) a = [a]; return tools.seen({a}) })()").await;
    assert!(m.starts_with("invalid arguments for seen: args.a"), "{m}");
    assert!(m.ends_with("the value nests deeper than 127 levels"), "{m}");
    // as a result too
    let v = h
        .run("let a = {}; for (let i = 0; i < 100000; i++) a = {a}; return a")
        .await;
    assert_eq!(v["error"]["name"], "ResultError");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .ends_with("the value nests deeper than 126 levels")
    );
    // The result sits one level down in the canonical value, which stays within 127
    // levels (and so parses back with serde_json): 126 levels are a result, 127 are not.
    let deep =
        |levels: usize| format!("let a = []; for (let i = 1; i < {levels}; i++) a = [a]; return a");
    let v = h.run(&deep(126)).await;
    assert_eq!(v["status"], "ok", "{:?}", v["error"]);
    let text = serde_json::to_string(&v).unwrap();
    assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok());
    let v = h.run(&deep(127)).await;
    assert_eq!(v["error"]["name"], "ResultError");
}

#[tokio::test]
async fn arguments_are_a_snapshot_the_program_cannot_change() {
    let (h, seen) = harness();
    h.ok("const a = {x: 1, list: [1]}; const p = tools.seen(a); a.x = 2; a.list.push(2); await p")
        .await;
    assert_eq!(seen.lock().unwrap()[0], json!({"x": 1, "list": [1]}));
    // the result is taken when the program settles; later changes do not reach it
    let r = h
        .ok("const o = {v: 1}; setTimeout(() => { o.v = 2 }, 0); return o")
        .await;
    assert_eq!(r, json!({"v": 1}));
}

#[tokio::test]
async fn errors_become_name_and_message() {
    let (h, seen) = harness();
    h.ok("const e = new RangeError('too far'); e.code = 7; await tools.seen({e})")
        .await;
    assert_eq!(
        seen.lock().unwrap()[0],
        json!({"e": {"name": "RangeError", "message": "too far", "code": 7}})
    );
}

#[tokio::test]
async fn a_result_the_engine_cannot_hold_fails_the_call_instead_of_hanging_it() {
    let huge: serde_json::Value =
        serde_json::from_str(&format!("{{\"x\": {}}}", "7".repeat(400_000))).unwrap();
    let mut h = Harness::new(Limits::default());
    h.add(test_tool("huge_now").returns(huge.clone()));
    h.add(test_tool("huge_later").execute(move |_a, _e| {
        let v = huge.clone();
        async move {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            Ok(v)
        }
    }));
    let v = h
        .run(
            "async function t(f) { try { await f(); return 'settled'; } catch (e) { return `${e.name}: ${e.message}`; } }
             return [await t(() => tools.huge_now({})), await t(() => tools.huge_later({}))]",
        )
        .await;
    assert_eq!(v["status"], "ok", "{v:#}");
    let results = v["result"].as_array().unwrap();
    for r in results {
        let r = r.as_str().unwrap();
        assert!(
            r.starts_with("ToolCallError: ") && r.contains("BigInt is too large"),
            "{r}"
        );
    }
    assert_eq!(v["calls"][1]["status"], "error", "{v:#}");
}

#[tokio::test]
async fn repeated_short_strings_in_a_result_are_held_once_and_read_as_sent() {
    const N: usize = 200_000;
    // 200 000 strings, each its own block in the engine, need about 10 MB beyond the
    // array's own 3 to 5 MB; one shared string fits in the same limit.
    let mut h = Harness::new(Limits::default().memory(12 << 20));
    h.add(test_tool("same").returns(json!(vec!["open"; N])));
    h.add(test_tool("distinct").returns(Value::Array(
        (0..N).map(|i| json!(format!("k{i}"))).collect(),
    )));
    let long = "a string longer than thirty-two bytes, made for each value";
    h.add(test_tool("mixed").returns(json!([
        "é✓", "é✓", long, long, "", "", "open", "OPEN", "open ", "k1", "k1"
    ])));
    let v = h
        .ok("const v = await tools.same(); return [v.length, v.every((s) => s === 'open'), v[0] + v[N - 1]]"
            .replace('N', &N.to_string())
            .as_str())
        .await;
    assert_eq!(v, json!([N, true, "openopen"]));
    let v = h
        .run("const v = await tools.distinct(); return v.length")
        .await;
    assert_eq!(v["error"]["name"], "OutOfMemory", "{v:#}");
    // 6 000 texts, each met twice or more, in a table of 1 024 slots: texts that share a
    // slot take it from each other, and every value still reads as sent.
    let mut small = Harness::new(Limits::default());
    small.add(
        test_tool("distinct").returns(Value::Array(
            (0..10_000)
                .map(|i| json!(format!("k{}", i % 6_000)))
                .collect(),
        )),
    );
    let v = small
        .ok("const v = await tools.distinct(); return [new Set(v).size, v[0], v[5999], v[6000], v[9999], v.every((s, i) => s === 'k' + (i % 6000))]")
        .await;
    assert_eq!(v, json!([6_000, "k0", "k5999", "k0", "k3999", true]));
    let v = h
        .ok("const v = await tools.mixed(); return [v, v.map((s) => s.length), v[0] === v[1], v[2] === v[3]]")
        .await;
    assert_eq!(
        v,
        json!([
            [
                "é✓", "é✓", long, long, "", "", "open", "OPEN", "open ", "k1", "k1"
            ],
            [2, 2, long.len(), long.len(), 0, 0, 4, 4, 5, 2, 2],
            true,
            true
        ])
    );
}
