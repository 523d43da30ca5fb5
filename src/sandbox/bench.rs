//! Engine-side measurements for the criterion benches (`benches/schema.rs`): not part of
//! the public API. Re-exported, without any engine type in a signature, by
//! `codemode::bench_support`.

use std::time::{Duration, Instant};

use rquickjs::{Context, Function, Object, Runtime, Value};

use super::convert::{Primordials, ToJson, json_to_js};
use crate::value::PathSeg;

/// Gives the C allocator's free pages back to the system, as a run does after a large tool
/// result: a memory figure then starts from what the process really holds.
pub fn return_free_memory() {
    super::alloc::return_free_memory();
}

/// How a value crosses from JS to Rust and back.
#[derive(Clone, Copy, Debug)]
pub enum Crossing {
    /// The sandbox's direct conversion, one recursive pass each way.
    Direct,
    /// `JSON.stringify` + `serde_json::from_str`, then `serde_json::to_string` + `JSON.parse`.
    JsonText,
    /// Only the JS → Rust half of `Direct`.
    DirectToRust,
    /// Only the Rust → JS half of `Direct`.
    DirectToJs,
    /// Only the JS → Rust half of `JsonText`.
    JsonTextToRust,
    /// Only the Rust → JS half of `JsonText`.
    JsonTextToJs,
    /// The engine's own `JSON.stringify` of the value, nothing else: the baseline of
    /// `DirectToRust`.
    EngineStringify,
    /// The engine's own `JSON.parse` of the value's JSON text (made before the clock
    /// starts), nothing else: the baseline of `DirectToJs`.
    EngineParse,
}

/// Builds a value in a fresh engine with `setup` (a JS expression), then times
/// `iterations` JS → Rust → JS round trips of it. Returns the time and the JSON size of the
/// value in bytes.
///
/// # Panics
/// When the engine cannot start or `setup` fails: benches only.
pub fn time_round_trips(setup: &str, crossing: Crossing, iterations: u64) -> (Duration, usize) {
    let rt = Runtime::new().expect("runtime");
    rt.set_max_stack_size(8 << 20);
    let ctx = Context::full(&rt).expect("context");
    ctx.with(|ctx| {
        let prims_obj: Object = ctx
            .eval(
                "({ObjectPrototype: Object.prototype, ArrayPrototype: Array.prototype, BigInt, Map, Set, WeakMap, WeakSet, ArrayBuffer, Promise, RegExp, WeakRef, ArrayBufferIsView: ArrayBuffer.isView})",
            )
            .expect("primordials");
        let prims = Primordials::capture(&prims_obj, Default::default()).expect("primordials");
        let value: Value = ctx.eval(setup).expect("setup");
        let stringify: Function = ctx.eval("JSON.stringify").expect("stringify");
        let mut size = 0;
        let mut conv = ToJson::new(&ctx, &prims, usize::MAX, "bench");
        let Ok(Some(prepared)) = conv.convert_root(value.clone(), &PathSeg::Root("v")) else {
            panic!("conversion failed");
        };
        let text = serde_json::to_string(&prepared).expect("serialize");
        // The conversion to JS takes its value: one copy per iteration, made before the
        // clock starts.
        let mut copies: Vec<serde_json::Value> = match crossing {
            Crossing::DirectToJs => (0..iterations).map(|_| prepared.clone()).collect(),
            _ => Vec::new(),
        };
        let started = Instant::now();
        for _ in 0..iterations {
            let back = match crossing {
                Crossing::Direct => {
                    let mut conv = ToJson::new(&ctx, &prims, usize::MAX, "bench");
                    let Ok(Some(json)) = conv.convert_root(value.clone(), &PathSeg::Root("v")) else {
                        panic!("conversion failed");
                    };
                    if size == 0 {
                        size = crate::value::json_size(&json);
                    }
                    json_to_js(&ctx, &prims, json).expect("to js")
                }
                Crossing::JsonText => {
                    let text: String = stringify.call((value.clone(),)).expect("stringify");
                    let json: serde_json::Value = serde_json::from_str(&text).expect("parse");
                    size = text.len();
                    let text = serde_json::to_string(&json).expect("serialize");
                    ctx.json_parse(text).expect("JSON.parse")
                }
                Crossing::DirectToRust => {
                    let mut conv = ToJson::new(&ctx, &prims, usize::MAX, "bench");
                    let json = conv.convert_root(value.clone(), &PathSeg::Root("v"));
                    std::hint::black_box(json.is_ok());
                    Value::new_undefined(ctx.clone())
                }
                Crossing::DirectToJs => {
                    let copy = copies.pop().expect("one copy per iteration");
                    json_to_js(&ctx, &prims, copy).expect("to js")
                }
                Crossing::JsonTextToRust => {
                    let text: String = stringify.call((value.clone(),)).expect("stringify");
                    let json: serde_json::Value = serde_json::from_str(&text).expect("parse");
                    std::hint::black_box(json);
                    Value::new_undefined(ctx.clone())
                }
                Crossing::EngineStringify => {
                    let text: rquickjs::String = stringify.call((value.clone(),)).expect("stringify");
                    std::hint::black_box(text);
                    Value::new_undefined(ctx.clone())
                }
                Crossing::EngineParse => ctx.json_parse(text.as_str()).expect("JSON.parse"),
                Crossing::JsonTextToJs => {
                    let text = serde_json::to_string(&prepared).expect("serialize");
                    ctx.json_parse(text).expect("JSON.parse")
                }
            };
            std::hint::black_box(back);
        }
        (started.elapsed(), size)
    })
}
