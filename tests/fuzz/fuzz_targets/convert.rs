//! (c) Value conversion between Rust and JavaScript through small programs: a generated
//! JSON value (integers up to 40 digits, `-0`, fractions, exponents, any text, deep
//! nesting, keys that are array indices) is returned by a tool, reaches the program, is
//! handled there in one of a few ways and goes back into another tool's arguments and out
//! as the program's result. Invariants: the run ends `ok`; the tool and the result receive
//! the same value as ECMAScript sees it (`bench_support::same_json_value`); nothing panics.
#![no_main]

use std::sync::{Arc, LazyLock, Mutex};

use arbitrary::Arbitrary;
use codemode::Registry;
use codemode::bench_support::same_json_value;
use codemode::run_code::{Limits, RunCodeConfig, run_code_tool};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Number, Value, json};

#[derive(Arbitrary, Debug)]
enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Unsigned(u64),
    /// An integer of many digits: the digits' low nibbles, a sign.
    BigInt(Vec<u8>, bool),
    Float(f64),
    NegZero,
    Text(String),
    IndexKey(u32),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn value(&self, depth: u8) -> Value {
        if depth == 0 {
            return Value::Null;
        }
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => json!(b),
            Json::Int(i) => json!(i),
            Json::Unsigned(u) => json!(u),
            Json::BigInt(digits, negative) => {
                let mut text: String = digits
                    .iter()
                    .take(40)
                    .map(|d| char::from(b'0' + d % 10))
                    .collect();
                text.insert(0, '1');
                if *negative {
                    text.insert(0, '-');
                }
                serde_json::from_str(&text).expect("digits are a JSON number")
            }
            Json::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Json::NegZero => serde_json::from_str("-0.0").expect("-0.0 is JSON"),
            Json::Text(s) => json!(s),
            Json::IndexKey(n) => json!({ n.to_string(): n, "k": 1 }),
            Json::Array(items) => items.iter().take(16).map(|j| j.value(depth - 1)).collect(),
            Json::Object(entries) => Value::Object(
                entries
                    .iter()
                    .take(16)
                    .map(|(k, j)| (k.clone(), j.value(depth - 1)))
                    .collect::<Map<_, _>>(),
            ),
        }
    }
}

/// What the program does with the value between the two tools.
#[derive(Arbitrary, Debug)]
enum Handling {
    AsIs,
    InArray,
    Spread,
    ThroughPromiseAll,
    Logged,
}

impl Handling {
    fn program(&self) -> &'static str {
        match self {
            Handling::AsIs => "const {v} = await tools.give({}); await tools.take({v}); return [v]",
            Handling::InArray => {
                "const r = await tools.give({}); const a = [r.v]; await tools.take({v: a[0]}); return a"
            }
            Handling::Spread => {
                "const r = {...await tools.give({})}; await tools.take({...r}); return [r.v]"
            }
            Handling::ThroughPromiseAll => {
                "const [x, y] = await Promise.all([tools.give({}), tools.give({})]); \
                 await tools.take({v: y.v}); return [x.v]"
            }
            Handling::Logged => {
                "const {v} = await tools.give({}); console.log(v); await tools.take({v}); return [v]"
            }
        }
    }
}

struct Host {
    runtime: tokio::runtime::Runtime,
    registry: Registry,
    given: Arc<Mutex<Value>>,
    taken: Arc<Mutex<Option<Value>>>,
}

static HOST: LazyLock<Host> = LazyLock::new(|| {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let registry = Registry::new();
    let given: Arc<Mutex<Value>> = Arc::default();
    let taken: Arc<Mutex<Option<Value>>> = Arc::default();
    let config = RunCodeConfig::default()
        .limits(Limits::default().memory(64 << 20))
        .spill(None)
        .output_cap(1 << 30);
    let (give, take) = (given.clone(), taken.clone());
    let tools = [
        run_code_tool(config),
        codemode::Tool::builder("give")
            .execute(move |_a, _e| {
                let v = give.lock().unwrap().clone();
                async move { Ok(json!({ "v": v })) }
            })
            .build()
            .unwrap(),
        codemode::Tool::builder("take")
            .execute(move |args, _e| {
                *take.lock().unwrap() = args.get("v").cloned();
                async move { Ok(Value::Null) }
            })
            .build()
            .unwrap(),
    ];
    for t in tools {
        registry.register(t).unwrap().forget();
    }
    Host {
        runtime,
        registry,
        given,
        taken,
    }
});

fuzz_target!(|input: (Json, Handling)| {
    codemode::bench_support::tolerate_parser_assertions();
    let (json, handling) = input;
    let value = json.value(6);
    let host = &*HOST;
    *host.given.lock().unwrap() = value.clone();
    *host.taken.lock().unwrap() = None;
    let out = host
        .runtime
        .block_on(
            host.registry
                .call("run_code", json!({ "code": handling.program() })),
        )
        .into_result()
        .expect("run_code answers");
    assert_eq!(out["status"], "ok", "{out:#}");
    let received = host.taken.lock().unwrap().take().expect("take was called");
    assert!(
        same_json_value(&received, &value),
        "into a tool: {value} became {received}"
    );
    assert!(
        same_json_value(&out["result"][0], &value),
        "as the result: {value} became {}",
        out["result"][0]
    );
});
