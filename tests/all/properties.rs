//! Property tests (issue 21, item 4) for what needs no fuzzer: a JSON Schema imported,
//! exported and imported again is exported the same; JSON values cross into a program and
//! back unchanged, big integers included.

use std::sync::{Arc, Mutex};

use codemode::bench_support::same_json_value;
use codemode::run_code::Limits;
use codemode::schema::ValueSchema;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::support::{Harness, test_tool};

/// A JSON Schema built from the keywords tools' schemas use, nested.
fn arb_schema() -> impl Strategy<Value = Value> {
    let text = "[a-z ]{0,12}";
    let leaf = prop_oneof![
        Just(json!({"type": "string"})),
        (0u64..5, 5u64..40)
            .prop_map(|(a, b)| json!({"type": "string", "minLength": a, "maxLength": b})),
        prop::sample::select(vec!["^[a-z]+$", "\\d{2}", "^.{2,4}$"])
            .prop_map(|p| json!({"type": "string", "pattern": p})),
        prop::sample::select(vec!["date-time", "email", "uri", "uuid"])
            .prop_map(|f| json!({"type": "string", "format": f})),
        (-1000i64..1000, 0i64..1000)
            .prop_map(|(a, d)| json!({"type": "integer", "minimum": a, "maximum": a + d})),
        (1u64..10).prop_map(|m| json!({"type": "number", "multipleOf": m, "exclusiveMinimum": 0})),
        Just(json!({"type": "boolean"})),
        Just(json!({"type": "null"})),
        prop::collection::vec(text, 1..4).prop_map(|v| json!({"enum": v})),
        any::<i32>().prop_map(|n| json!({"const": n})),
        (text, any::<bool>())
            .prop_map(|(d, b)| json!({"type": "boolean", "description": d, "default": b})),
        Just(json!({})),
    ];
    leaf.prop_recursive(3, 40, 5, |inner| {
        prop_oneof![
            (inner.clone(), 0u64..3).prop_map(|(items, min)| json!({"type": "array", "items": items, "minItems": min})),
            prop::collection::vec(("[a-z]{1,6}", inner.clone(), any::<bool>()), 0..5).prop_map(|props| {
                let required: Vec<&String> = props.iter().filter(|(_, _, r)| *r).map(|(k, _, _)| k).collect();
                let properties: serde_json::Map<String, Value> =
                    props.iter().map(|(k, s, _)| (k.clone(), s.clone())).collect();
                let mut required: Vec<&String> = required.into_iter().filter(|k| properties.contains_key(*k)).collect();
                required.dedup();
                json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
            }),
            prop::collection::vec(inner.clone(), 1..4).prop_map(|v| json!({"anyOf": v})),
            prop::collection::vec(inner.clone(), 1..3).prop_map(|v| json!({"oneOf": v})),
            (inner.clone(), "[a-z ]{1,20}").prop_map(|(s, d)| {
                let mut s = s;
                if let Some(o) = s.as_object_mut() {
                    o.insert("description".into(), json!(d));
                }
                s
            }),
            inner.prop_map(|s| json!({"$defs": {"Thing": s}, "$ref": "#/$defs/Thing"})),
        ]
    })
}

/// A JSON value with numbers of every kind: small and big integers, negative zero,
/// fractions, exponents.
fn arb_value() -> impl Strategy<Value = Value> {
    let number = prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        "-?[1-9][0-9]{19,40}".prop_map(|n| serde_json::from_str::<Value>(&n).unwrap()),
        (-1.0e6f64..1.0e6).prop_map(|f| json!(f)),
        prop::sample::select(vec!["-0.0", "0.5", "1e300", "-2.5e-10", "123456.789"])
            .prop_map(|n| serde_json::from_str::<Value>(n).unwrap()),
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        number,
        "\\PC{0,20}".prop_map(Value::from),
        Just(json!("👍🏽 é \"\\\n\u{0}")),
    ];
    leaf.prop_recursive(5, 200, 10, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..10).prop_map(Value::Array),
            prop::collection::vec(("\\PC{0,8}", inner), 0..10)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Import, export, import: the second export is the first, and both imports accept and
    /// refuse the same values.
    #[test]
    fn a_schema_imported_and_exported_is_a_fixed_point(schema in arb_schema(), probe in arb_value()) {
        let Ok((first, _)) = ValueSchema::from_json_schema(&schema) else {
            return Ok(());
        };
        let exported = first.to_json_schema();
        let (second, _) = ValueSchema::from_json_schema(&exported)
            .unwrap_or_else(|e| panic!("our own export does not import: {e}\n{exported:#}"));
        prop_assert_eq!(&second.to_json_schema(), &exported);
        prop_assert_eq!(first.validate(&probe).is_ok(), second.validate(&probe).is_ok());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// A value a tool returns reaches the program, goes back into another tool's arguments
    /// and out as the program's result, unchanged each way.
    #[test]
    fn json_values_cross_into_a_program_and_back_unchanged(value in arb_value()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let given = value.clone();
        let taken: Arc<Mutex<Option<Value>>> = Arc::default();
        let keep = taken.clone();
        let mut h = Harness::new(Limits::default());
        h.add(test_tool("give").execute(move |_a, _e| {
            let v = given.clone();
            async move { Ok(json!({"v": v})) }
        }));
        h.add(test_tool("take").execute(move |args, _e| {
            *keep.lock().unwrap() = args.get("v").cloned();
            async move { Ok(json!(null)) }
        }));
        let out = rt.block_on(h.run("const {v} = await tools.give({}); await tools.take({v}); return [v]"));
        prop_assert_eq!(&out["status"], "ok", "{:#}", out);
        let received = taken.lock().unwrap().clone().unwrap();
        prop_assert!(same_json_value(&received, &value), "into a tool: {} became {}", value, received);
        prop_assert!(same_json_value(&out["result"][0], &value), "as the result: {} became {}", value, out["result"][0]);
    }
}

/// The schema property is not vacuous: most generated schemas import.
#[test]
fn most_generated_schemas_import() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = arb_schema();
    let total = 300;
    let imported = (0..total)
        .filter(|_| {
            let schema = strategy.new_tree(&mut runner).unwrap().current();
            ValueSchema::from_json_schema(&schema).is_ok()
        })
        .count();
    assert!(imported * 10 >= total * 9, "{imported} of {total} imported");
}

/// The declarations of tools with generated schemas (input and output) pass the real
/// TypeScript compiler in both layouts: a sample of 40 tools, one compiler run per layout.
#[test]
fn declarations_of_generated_schemas_pass_tsc() {
    use codemode::declarations::{Layout, SANDBOX_GLOBALS, mcp_tool_decls};
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = arb_schema();
    let mut next = || strategy.new_tree(&mut runner).unwrap().current();
    let tools: Vec<Value> = (0..40)
        .map(|i| {
            json!({
                "name": format!("t{i}"),
                "description": "A generated tool.",
                "inputSchema": {"type": "object", "properties": {"x": next()}, "required": ["x"]},
                "outputSchema": next(),
            })
        })
        .collect();
    let decls = mcp_tool_decls(&json!({ "tools": tools }));
    assert_eq!(decls.len(), 40);
    for layout in [Layout::Pretty, Layout::Compact] {
        let d = codemode_codegen::declarations_with(&decls, layout).unwrap();
        let (ok, diagnostics) =
            crate::support::tsc(&[("tools.d.ts", &d), ("globals.d.ts", SANDBOX_GLOBALS)]);
        assert!(ok, "{layout:?}:\n{diagnostics}\n{d}");
    }
}
