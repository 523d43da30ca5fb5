//! JSON Schema import: real MCP servers, every keyword, round trips.

use codemode::schema::{Node, NodeKind, ParameterSchema, ValueSchema};
use serde_json::{Value, json};

fn fixture(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp")
        .join(format!("{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn params(schema: Value) -> ParameterSchema {
    let (p, _) = ParameterSchema::from_json_schema(&schema).unwrap();
    p
}

/// `schema` as it reads back from its export: whether `format` asserts does not travel
/// through 2020-12, where it is an annotation by default (the rest must be equal).
fn without_format_assertions(schema: &impl std::fmt::Debug) -> String {
    format!("{schema:?}").replace("format_asserted: true", "format_asserted: false")
}

#[test]
fn real_mcp_server_schemas_import_and_round_trip() {
    let mut total = 0;
    for server in ["server-everything", "server-filesystem", "server-memory"] {
        let f = fixture(server);
        for tool in f["tools"].as_array().unwrap() {
            let name = tool["name"].as_str().unwrap();
            let (input, warnings) = ParameterSchema::from_json_schema(&tool["inputSchema"])
                .unwrap_or_else(|e| panic!("{server}/{name}: {e}"));
            assert!(warnings.is_empty(), "{server}/{name}: {warnings:?}");
            let again = ParameterSchema::from_json_schema(&input.to_json_schema())
                .unwrap()
                .0;
            assert_eq!(
                format!("{again:?}"),
                without_format_assertions(&input),
                "{server}/{name} input round trip"
            );
            if let Some(out) = tool.get("outputSchema") {
                let (output, warnings) = ValueSchema::from_json_schema(out).unwrap();
                assert!(warnings.is_empty(), "{server}/{name}: {warnings:?}");
                let again = ValueSchema::from_json_schema(&output.to_json_schema())
                    .unwrap()
                    .0;
                assert_eq!(
                    format!("{again:?}"),
                    without_format_assertions(&output),
                    "{server}/{name} output round trip"
                );
            }
            total += 1;
        }
    }
    assert_eq!(total, 36);
}

#[test]
fn imported_mcp_schemas_validate_like_the_server_means() {
    let f = fixture("server-filesystem");
    let tool = |n: &str| {
        f["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == n)
            .unwrap()["inputSchema"]
            .clone()
    };
    let edit = params(tool("edit_file"));
    assert!(
        edit.validate(
            &json!({"path": "a.txt", "edits": [{"oldText": "a", "newText": "b"}], "dryRun": true})
        )
        .is_ok()
    );
    assert_eq!(
        edit.validate(&json!({"path": "a.txt", "edits": [{"oldText": 1}]}))
            .unwrap_err()
            .to_string(),
        "args.edits[0].oldText: expected string, got number\nargs.edits[0].newText: missing required property (expected string)"
    );
    let e = fixture("server-everything");
    let sum = e["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "get-sum")
        .unwrap();
    let sum = params(sum["inputSchema"].clone());
    assert!(sum.validate(&json!({"a": 1, "b": 2.5})).is_ok());
    assert_eq!(
        sum.validate(&json!({"a": "1"})).unwrap_err().to_string(),
        "args.a: expected number, got string\nargs.b: missing required property (expected number)"
    );
}

#[test]
fn type_arrays_nullable_const_and_enum() {
    let p = params(json!({"type": "object", "properties": {
        "a": {"type": ["string", "null"], "maxLength": 2},
        "b": {"type": "integer", "nullable": true},
        "c": {"const": "x"},
        "d": {"type": "string", "enum": ["aa", "b", 3]},
        "e": {"enum": ["a", 1, null]}
    }}));
    assert!(
        p.validate(&json!({"a": null, "b": null, "c": "x", "d": "aa", "e": null}))
            .is_ok()
    );
    assert!(p.validate(&json!({"a": "ab", "b": 3, "e": 1})).is_ok());
    let errs = p
        .validate(&json!({"a": "abc", "b": 1.5, "c": "y", "d": 3, "e": "b"}))
        .unwrap_err();
    assert_eq!(errs.violations.len(), 5, "{errs}");
    assert_eq!(
        errs.violations[2].to_string(),
        "args.c: expected \"x\", got \"y\""
    );
}

#[test]
fn recursive_references_import_as_named_definitions() {
    let schema = json!({
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Tree"}},
        "required": ["root"],
        "$defs": {"Tree": {"type": "object", "properties": {
            "value": {"type": "integer"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}
        }, "required": ["value"], "additionalProperties": false}}
    });
    let p = params(schema);
    assert_eq!(p.definitions().keys().collect::<Vec<_>>(), ["Tree"]);
    assert!(matches!(p.properties()["root"].kind(), NodeKind::Ref(n) if n == "Tree"));
    assert!(
        p.validate(&json!({"root": {"value": 1, "children": [{"value": 2, "children": []}]}}))
            .is_ok()
    );
    assert_eq!(
        p.validate(&json!({"root": {"value": 1, "children": [{"value": "x"}]}}))
            .unwrap_err()
            .to_string(),
        "args.root.children[0].value: expected integer, got string"
    );
    // `definitions` (draft 7) and a pointer to a property work too
    let p = params(json!({"type": "object", "properties": {
        "a": {"$ref": "#/definitions/A"}, "b": {"$ref": "#/properties/a"}},
        "definitions": {"A": {"type": "string"}}}));
    assert!(p.validate(&json!({"a": "x", "b": "y"})).is_ok());
    assert!(p.validate(&json!({"b": 1})).is_err());
    let again = ParameterSchema::from_json_schema(&p.to_json_schema())
        .unwrap()
        .0;
    assert_eq!(again, p);
}

#[test]
fn tuples_draft4_bounds_and_all_of() {
    let p = params(json!({"type": "object", "properties": {
        "t": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}], "items": false},
        "old": {"type": "array", "items": [{"type": "string"}], "additionalItems": {"type": "boolean"}},
        "n": {"type": "number", "minimum": 0, "exclusiveMinimum": true},
        "m": {"allOf": [
            {"type": "object", "properties": {"x": {"type": "string"}}},
            {"type": "object", "properties": {"y": {"type": "number"}}, "required": ["y"]}
        ]}
    }}));
    assert!(
        p.validate(
            &json!({"t": ["a", 1], "old": ["a", true, false], "n": 0.5, "m": {"x": "s", "y": 1}})
        )
        .is_ok()
    );
    assert_eq!(
        p.validate(&json!({"t": ["a", 1, 2], "old": ["a", 1], "n": 0, "m": {"x": "s"}}))
            .unwrap_err()
            .to_string(),
        "args.t[2]: the tuple has 2 elements; this one is extra\n\
         args.old[1]: expected boolean, got number\n\
         args.n: expected a number > 0, got 0\n\
         args.m.y: missing required property (expected number)"
    );
    // the allOf of open objects merged into one object
    assert!(matches!(p.properties()["m"].kind(), NodeKind::Object(o) if o.properties.len() == 2));
}

#[test]
fn unknown_keywords_are_kept_and_warned_never_dropped() {
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "string", "x-widget": "textarea", "title": "A"},
        "b": {"type": "object", "patternProperties": {"^x": {"type": "string"}}, "x-order": 2}
    }});
    let (p, warnings) = ParameterSchema::from_json_schema(&schema).unwrap();
    let shown: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "input_schema.properties.a.x-widget: `x-widget` is kept for display but not enforced",
            "input_schema.properties.b.x-order: `x-order` is kept for display but not enforced",
        ]
    );
    let exported = p.to_json_schema();
    assert_eq!(exported["properties"]["a"]["x-widget"], "textarea");
    assert_eq!(exported["properties"]["a"]["title"], "A");
    assert_eq!(
        exported["properties"]["b"]["patternProperties"]["^x"]["type"],
        "string"
    );
}

#[test]
fn bad_imported_definitions_name_their_path() {
    let err = ParameterSchema::from_json_schema(&json!({"type": "object", "properties": {
        "o": {"type": "object", "properties": {}, "required": ["x"], "additionalProperties": false}}}))
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "input_schema.properties.o.required[0]: required property \"x\" is not in `properties`, matches no `patternProperties`, and additionalProperties is false, so no object can match"
    );
    let err = ParameterSchema::from_json_schema(
        &json!({"properties": {"p": {"type": "string", "pattern": "(?<x"}}}),
    )
    .unwrap_err();
    assert!(
        err.to_string().starts_with(
            "input_schema.properties.p.pattern: invalid ECMAScript regular expression"
        ),
        "{err}"
    );
    let err = ParameterSchema::from_json_schema(
        &json!({"properties": {"p": {"$ref": "https://example.com/s.json"}}}),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "input_schema.properties.p.$ref: $ref \"https://example.com/s.json\" is not local: only references inside the schema (#/…) are supported"
    );
    let err = ParameterSchema::from_json_schema(&json!({"type": "string"})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "input_schema: the arguments schema must describe an object, but it describes string"
    );
    let err = ParameterSchema::from_json_schema(
        &json!({"properties": {"a": {"$ref": "#/$defs/Missing"}}}),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "input_schema.$defs.Missing: $ref #/$defs/Missing points to nothing in the schema"
    );
    // a `required` key without a property is a required property of any value
    let p = params(json!({"type": "object", "required": ["k"]}));
    assert!(p.properties()["k"].is_required());
    assert!(p.validate(&json!({})).is_err());
}

#[test]
fn a_root_one_of_is_kept_as_a_condition() {
    let p = params(
        json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}),
    );
    assert_eq!(p.conditions().len(), 1);
    assert!(p.validate(&json!({"a": "x"})).is_ok());
    assert!(p.validate(&json!({"a": "x", "b": "y"})).is_err());
    assert!(p.validate(&json!({})).is_err());
    let again = ParameterSchema::from_json_schema(&p.to_json_schema())
        .unwrap()
        .0;
    assert_eq!(again, p);
}

#[test]
fn node_language_round_trips_through_json_schema() {
    let node = Node::object([
        (
            "s",
            Node::string()
                .min_length(1)
                .pattern("^a")
                .format("date")
                .required(),
        ),
        ("e", Node::string().string_enum(["x", "y"])),
        ("n", Node::number().exclusive_minimum(0).maximum(10)),
        ("l", Node::literal(json!({"k": [1, 2]}))),
        (
            "u",
            Node::union([Node::string(), Node::array(Node::integer()).max_items(3)]),
        ),
        ("t", Node::tuple([Node::boolean(), Node::null()])),
        (
            "o",
            Node::object([("x", Node::any())]).additional_schema(Node::integer()),
        ),
        ("never", Node::never()),
    ])
    .additional_properties(false)
    .describe("root");
    let v = ValueSchema::new(node);
    v.check().unwrap();
    let (again, warnings) = ValueSchema::from_json_schema(&v.to_json_schema()).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    // Whether `format` asserts does not travel through 2020-12 (an annotation there by
    // default): the rest of the node does.
    assert!(v.validate(&json!({"s": "a-not-a-date"})).is_err());
    assert!(again.validate(&json!({"s": "a-not-a-date"})).is_ok());
    assert_eq!(format!("{v:?}").matches("format_asserted: true").count(), 1);
    assert_eq!(format!("{again:?}"), without_format_assertions(&v));
}

fn output(schema: Value) -> ValueSchema {
    ValueSchema::from_json_schema(&schema)
        .unwrap_or_else(|e| panic!("{schema}: {e}"))
        .0
}

fn error_of(schema: &ValueSchema, value: Value) -> String {
    schema.validate(&value).unwrap_err().to_string()
}

#[test]
fn keywords_imply_no_type_when_validating() {
    let s = output(json!({"minItems": 1}));
    assert!(s.validate(&json!("")).is_ok());
    assert!(s.validate(&json!(5)).is_ok());
    assert_eq!(
        error_of(&s, json!([])),
        "output: expected at least 1 items, got 0"
    );
    // exported without the type the keywords suggested
    assert_eq!(s.to_json_schema(), json!({"items": {}, "minItems": 1}));

    let s = output(json!({"properties": {"a": {"type": "string"}}, "minLength": 2}));
    assert!(s.validate(&json!(5)).is_ok());
    assert!(s.validate(&json!({"a": "x"})).is_ok());
    assert_eq!(
        error_of(&s, json!({"a": 1})),
        "output.a: expected string, got number"
    );
    assert_eq!(
        error_of(&s, json!("x")),
        "output: expected at least 2 characters, got 1"
    );

    // an explicit type still refuses other types
    let s = output(json!({"type": "array", "minItems": 1}));
    assert_eq!(
        error_of(&s, json!("")),
        "output: expected array, got string"
    );
    // an enum of strings beside string keywords allows strings only
    let s = output(json!({"enum": ["ab", "abc"], "maxLength": 2}));
    assert_eq!(
        error_of(&s, json!(5)),
        "output: expected string, got number"
    );
    assert_eq!(
        error_of(&s, json!("abc")),
        "output: expected at most 2 characters, got 3\noutput: expected one of \"ab\", got \"abc\""
    );
}

#[test]
fn counts_written_as_decimals_are_integers() {
    let s = output(json!({"type": "array", "minItems": 1.0, "maxItems": 2.0}));
    assert_eq!(
        error_of(&s, json!([])),
        "output: expected at least 1 items, got 0"
    );
    assert_eq!(
        error_of(&s, json!([1, 2, 3])),
        "output: expected at most 2 items, got 3"
    );
    let err = ValueSchema::from_json_schema(&json!({"minProperties": 1.5})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "output_schema.minProperties: expected a non-negative integer"
    );
}

#[test]
fn pattern_properties_are_not_additional() {
    // The shape of a real MCP server's argument that used to be refused.
    let p = params(json!({"type": "object", "properties": {
        "headers": {
            "type": "object",
            "properties": {"host": {"type": "string"}},
            "patternProperties": {"^x-": {"type": "integer"}},
            "additionalProperties": false
        }
    }}));
    assert!(
        p.validate(&json!({"headers": {"host": "a", "x-id": 1}}))
            .is_ok()
    );
    assert_eq!(
        p.validate(&json!({"headers": {"x-id": "1"}}))
            .unwrap_err()
            .to_string(),
        "args.headers[\"x-id\"]: expected integer, got string"
    );
    assert_eq!(
        p.validate(&json!({"headers": {"y": 1}}))
            .unwrap_err()
            .to_string(),
        "args.headers.y: unknown property (allowed: host); keys matching /^x-/ are allowed too"
    );
    // every matching pattern applies, and `properties` too
    let s = output(json!({"properties": {"aa": {"maxLength": 1}},
        "patternProperties": {"a": {"type": "string"}, "^a+$": {"minLength": 1}}}));
    assert!(s.validate(&json!({"aa": "x", "ba": "", "c": 1})).is_ok());
    assert_eq!(
        error_of(&s, json!({"aa": ""})),
        "output.aa: expected at least 1 characters, got 0"
    );
    assert_eq!(
        error_of(&s, json!({"ba": 1})),
        "output.ba: expected string, got number"
    );
    // the schema is exported as it was written
    assert_eq!(
        s.to_json_schema()["patternProperties"],
        json!({"a": {"type": "string"}, "^a+$": {"minLength": 1}})
    );
    let err = ValueSchema::from_json_schema(&json!({"patternProperties": {"(": {}}})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "output_schema.patternProperties[\"(\"]: invalid ECMAScript regular expression /(/: Unbalanced parenthesis"
    );
}

#[test]
fn property_names_and_dependencies_are_enforced() {
    let s = output(json!({"propertyNames": {"maxLength": 3}}));
    assert!(s.validate(&json!({"abc": 1})).is_ok());
    assert_eq!(
        error_of(&s, json!({"abcd": 1})),
        "output.abcd: the key does not match `propertyNames` {\"maxLength\":3}"
    );

    for key in ["dependentRequired", "dependencies"] {
        let s = output(json!({key: {"card": ["address"]}}));
        assert!(s.validate(&json!({"address": 1})).is_ok());
        assert_eq!(
            error_of(&s, json!({"card": 1})),
            "output.address: missing property, required when \"card\" is present"
        );
    }
    for key in ["dependentSchemas", "dependencies"] {
        let s = output(json!({key: {"card": {"required": ["cvv"]}}}));
        assert!(s.validate(&json!({"cvv": 1})).is_ok());
        assert_eq!(
            error_of(&s, json!({"card": 1})),
            "output.cvv: missing required property (expected any)"
        );
    }
}

#[test]
fn contains_counts_matching_elements() {
    let s = output(json!({"contains": {"type": "integer"}, "minContains": 2, "maxContains": 3}));
    assert!(s.validate(&json!("not an array")).is_ok());
    assert!(s.validate(&json!([1, "a", 2])).is_ok());
    assert_eq!(
        error_of(&s, json!([1, "a"])),
        "output: expected at least 2 element(s) matching `contains` {\"type\":\"integer\"}, got 1"
    );
    assert_eq!(
        error_of(&s, json!([1, 2, 3, 4])),
        "output: expected at most 3 element(s) matching `contains` {\"type\":\"integer\"}, got 4"
    );
    let s = output(json!({"contains": {"const": 1}, "minContains": 0}));
    assert!(s.validate(&json!([])).is_ok());
    let s = output(json!({"prefixItems": [{"type": "string"}], "contains": {"const": 1}}));
    assert_eq!(
        error_of(&s, json!(["a"])),
        "output: expected at least 1 element(s) matching `contains` {\"const\":1}, got 0"
    );
}

#[test]
fn unique_items_holds_for_tuples() {
    for schema in [
        json!({"prefixItems": [{}, {}], "uniqueItems": true}),
        json!({"items": [{}, {}], "uniqueItems": true}),
    ] {
        let s = output(schema);
        assert!(s.validate(&json!([1, 2])).is_ok());
        assert_eq!(
            error_of(&s, json!([1, 1.0])),
            "output[1]: duplicates element 0, but elements must be unique"
        );
    }
}

#[test]
fn not_and_conditionals_are_enforced_and_shown() {
    let s = output(json!({"not": {"type": "string"}}));
    assert!(s.validate(&json!(1)).is_ok());
    assert_eq!(
        error_of(&s, json!("a")),
        "output: matches a schema it must not match (`not`: {\"type\":\"string\"})"
    );
    assert_eq!(s.to_json_schema(), json!({"not": {"type": "string"}}));

    let s = output(json!({
        "if": {"properties": {"kind": {"const": "file"}}},
        "then": {"required": ["path"]},
        "else": {"required": ["url"]}
    }));
    assert!(s.validate(&json!({"kind": "file", "path": "a"})).is_ok());
    assert!(s.validate(&json!({"kind": "web", "url": "b"})).is_ok());
    assert_eq!(
        error_of(&s, json!({"kind": "file"})),
        "output.path: missing required property (expected any)"
    );
    assert_eq!(
        error_of(&s, json!({"kind": "web"})),
        "output.url: missing required property (expected any)"
    );
    assert_eq!(
        s.to_json_schema()["else"],
        json!({"properties": {"url": {}}, "required": ["url"], "additionalProperties": true})
    );
}

#[test]
fn keywords_not_implemented_are_refused_with_their_path() {
    let cases = [
        (
            json!({"properties": {"a": {"unevaluatedProperties": false}}}),
            "output_schema.properties.a.unevaluatedProperties: `unevaluatedProperties` (JSON Schema 2020-12 §11.3) is not supported; use `additionalProperties` beside `properties`/`patternProperties`",
        ),
        (
            json!({"items": {"unevaluatedItems": false}}),
            "output_schema.items.unevaluatedItems: `unevaluatedItems` (JSON Schema 2020-12 §11.2) is not supported; use `items` beside `prefixItems`",
        ),
        (
            json!({"$defs": {"a": {"$anchor": "a"}}, "$ref": "#a"}),
            "output_schema.$ref: $ref \"#a\" names an anchor (`$anchor`, JSON Schema 2020-12 §8.2.2), which is not supported: use a JSON Pointer (#/…)",
        ),
        (
            json!({"items": {"$id": "item.json"}}),
            "output_schema.items.$id: `$id` below the root (JSON Schema 2020-12 §8.2.1) is not supported: it changes how references inside it resolve",
        ),
        (
            json!({"$dynamicRef": "#meta"}),
            "output_schema.$dynamicRef: `$dynamicRef` (JSON Schema 2020-12 §8.2.3.2) is not supported; use `$ref` to a JSON Pointer (#/…)",
        ),
    ];
    for (schema, message) in cases {
        let err = ValueSchema::from_json_schema(&schema).unwrap_err();
        assert_eq!(err.to_string(), message);
    }
}

/// Issue 15, item 1: `format` follows each draft's default.
#[test]
fn format_asserts_in_draft_07_and_annotates_in_2020_12() {
    let date = |schema: Value| ValueSchema::from_json_schema(&schema).unwrap();
    for annotated in [
        json!({"type": "string", "format": "date"}),
        json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "string", "format": "date"}),
        json!({"$schema": "https://json-schema.org/draft/2019-09/schema", "type": "string", "format": "date"}),
    ] {
        let (s, warnings) = date(annotated.clone());
        assert!(s.validate(&json!("not a date")).is_ok(), "{annotated}");
        assert!(warnings.is_empty(), "{warnings:?}");
        // Still shown: the export keeps the keyword.
        assert_eq!(s.to_json_schema()["format"], "date");
    }
    let (s, warnings) = date(json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"d": {"type": "string", "format": "date"}, "r": {"type": "string", "format": "regex"}}
    }));
    assert!(s.validate(&json!({"d": "2024-02-29", "r": "(("})).is_ok());
    let e = s.validate(&json!({"d": "2023-02-29"})).unwrap_err();
    assert_eq!(e.violations.len(), 1, "{e:?}");
    assert_eq!(e.violations[0].path, "output.d");
    assert!(
        e.violations[0].message.starts_with("not a valid date"),
        "{e:?}"
    );
    // A format draft-07 would assert and codemode does not check is named.
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].path, "output_schema.properties.r.format");
    assert!(
        warnings[0]
            .message
            .starts_with("format \"regex\" is kept for display but not checked"),
        "{warnings:?}"
    );
    // A node built in Rust asserts its format.
    let s = ValueSchema::new(Node::string().format("uuid"));
    assert!(s.validate(&json!("nope")).is_err());
}
