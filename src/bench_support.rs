//! Entry points for the criterion benches in `benches/` and the fuzz targets in
//! `tests/fuzz/`: not part of the public API.
//!
//! No engine type appears here: what drives the engine lives in the sandbox and is only
//! re-exported.

use serde_json::{Map, Value};

pub use crate::sandbox::bench::{Crossing, return_free_memory, time_round_trips};

/// Presents a run's console `lines` and `result` as `run_code` does, capped to `cap`
/// characters: the lines stream through the console capture into a spill file in
/// `spill_dir` (when given), then the preview is built. Returns the canonical value.
pub fn cap_output(
    lines: Vec<String>,
    result: Value,
    cap: usize,
    spill_dir: Option<&std::path::Path>,
) -> Value {
    let config = crate::run_code::RunCodeConfig::default()
        .output_cap(cap)
        .spill(spill_dir.map(crate::run_code::SpillConfig::new));
    crate::run_code::present_lines(lines, result, &config)
}

/// Registers the tools of an MCP `tools/list` answer (`{"tools": [{name, description,
/// inputSchema, outputSchema?}]}`) in `registry` as `SERVER.tool`, each answering with its
/// arguments: the tool sets of the MCP fixtures, for figures and tests of what the model
/// reads. Panics on a schema the importer refuses.
pub fn register_listed_tools(
    registry: &crate::Registry,
    server: &str,
    list: &Value,
) -> Vec<crate::ToolHandle> {
    use crate::schema::{ParameterSchema, ValueSchema};
    let tools = list["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    tools
        .iter()
        .map(|t| {
            let name = format!("{server}.{}", t["name"].as_str().unwrap_or_default());
            let mut b = crate::Tool::builder(&name)
                .description(t["description"].as_str().unwrap_or_default())
                .parameters(
                    ParameterSchema::from_json_schema(&t["inputSchema"])
                        .unwrap_or_else(|e| panic!("{name}: {e}"))
                        .0,
                )
                .execute(|a, _e| async move { Ok((*a).clone()) });
            if let Some(out) = t.get("outputSchema") {
                b = b.output(
                    ValueSchema::from_json_schema(out)
                        .unwrap_or_else(|e| panic!("{name}: {e}"))
                        .0,
                );
            }
            registry
                .register(b.build().unwrap_or_else(|e| panic!("{name}: {e}")))
                .unwrap_or_else(|e| panic!("{name}: {e}"))
        })
        .collect()
}

/// Prepares a program's text as a run does (fences, parsing, program forms, TypeScript
/// stripping, positions): the JavaScript the engine would evaluate, or the error with its
/// position in the model's own source.
pub fn prepare_program(source: &str) -> Result<String, String> {
    crate::program::prepare(source)
        .map(|p| p.code)
        .map_err(|e| {
            let position = e
                .line
                .map(|l| format!(" at {l}:{}", e.column.unwrap_or(0)))
                .unwrap_or_default();
            format!("{}{position}: {}", e.kind.name(), e.message)
        })
}

/// For the fuzz targets: a panic raised inside swc's parser (one of its debug assertions,
/// which the program preparation contains and reports as an `InternalError`) unwinds to
/// where it is caught; every other panic goes to the hook installed before (libFuzzer's,
/// which aborts). Installs the hook once, however often it is called.
pub fn tolerate_parser_assertions() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let in_parser = info
                .location()
                .is_some_and(|l| l.file().contains("swc_ecma_parser"));
            if !in_parser {
                before(info);
            }
        }));
    });
}

/// Whether two JSON values are the same value as ECMAScript sees them (what a crossing of
/// the sandbox boundary must keep): numbers compared as numbers (an integer exactly, a
/// fraction by its `f64`, `-0` apart from `0`), everything else exactly, but for the order
/// of array-index keys (ECMAScript, "OrdinaryOwnPropertyKeys").
pub fn same_json_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (xs, ys) = (x.to_string(), y.to_string());
            if xs == ys {
                return true;
            }
            let integer = |s: &str| !s.contains(['.', 'e', 'E']);
            if integer(&xs) && integer(&ys) {
                return false;
            }
            match (xs.parse::<f64>(), ys.parse::<f64>()) {
                (Ok(p), Ok(q)) => p == q && p.is_sign_negative() == q.is_sign_negative(),
                _ => false,
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_json_value(p, q))
        }
        // ECMAScript orders an object's own keys: array indices ("0", "1", …) first, in
        // ascending order, then the other keys in the order they were made. Those keep
        // their order; every key keeps its value.
        (Value::Object(x), Value::Object(y)) => {
            let named = |m: &Map<String, Value>| -> Vec<String> {
                m.keys().filter(|k| !is_index(k)).cloned().collect()
            };
            x.len() == y.len()
                && named(x) == named(y)
                && x.iter()
                    .all(|(k, p)| y.get(k).is_some_and(|q| same_json_value(p, q)))
        }
        _ => a == b,
    }
}

/// Whether `key` is an array index as ECMAScript defines it: the canonical decimal form of
/// an integer from 0 to 2^32 - 2.
fn is_index(key: &str) -> bool {
    key.parse::<u32>()
        .is_ok_and(|n| n != u32::MAX && n.to_string() == key)
}
