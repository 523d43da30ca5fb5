//! Schemas: definition errors, validation paths, export.

use codemode::schema::{Node, ParameterSchema, ValueSchema};
use serde_json::json;

#[test]
fn validation_lists_every_violation_with_its_path() {
    let params = ParameterSchema::new([
        ("path", Node::string().required()),
        ("mode", Node::string().string_enum(["r", "w"])),
        (
            "items",
            Node::array(
                Node::object([
                    ("name", Node::string().required()),
                    ("n", Node::integer().minimum(0)),
                ])
                .additional_properties(false),
            ),
        ),
    ]);
    params.check().unwrap();
    let report = params
        .validate(&json!({"mode": "x", "items": [{"name": "a"}, {"name": 1, "n": -1, "extra": true}], "unknown_root_key": 1}))
        .unwrap_err();
    assert_eq!(
        report.to_string(),
        "args.mode: expected one of \"r\", \"w\", got \"x\"\n\
         args.items[1].name: expected string, got number\n\
         args.items[1].n: expected a number >= 0, got -1\n\
         args.items[1].extra: unknown property (allowed: name, n)\n\
         args.path: missing required property (expected string)"
    );
}

#[test]
fn unions_are_exact_one() {
    let schema = ValueSchema::new(Node::union([
        Node::string(),
        Node::any().describe("anything"),
    ]));
    let e = schema.validate(&json!("s")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "output: matches 2 branches (#1 string, #2 any \"anything\") but exactly one must match"
    );
    assert!(schema.validate(&json!(1)).is_ok());
    let schema = ValueSchema::new(Node::union([Node::string(), Node::null()]));
    assert_eq!(
        schema.validate(&json!(1)).unwrap_err().to_string(),
        "output: matches none of the 2 branches (#1 string, #2 null), got number"
    );
}

#[test]
fn the_json_form_parses_and_refuses_bad_types() {
    let params = ParameterSchema::from_json(&json!({
        "x": {"type": "string", "required": true, "description": "X"},
        "o": {"type": "object", "properties": {"a": {"type": "literal", "value": 1}}, "additionalProperties": false}
    }))
    .unwrap();
    assert!(params.validate(&json!({"x": "1", "o": {"a": 1}})).is_ok());
    let err = ParameterSchema::from_json(&json!({"x": {"type": "strng"}})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "parameters.x.type: unknown node type \"strng\" (expected one of string, number, integer, boolean, null, any, literal, array, tuple, object, union)"
    );
    let err = ParameterSchema::from_json(&json!({"o": {"type": "object", "properties": {}}}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "parameters.o: an object node must declare additionalProperties (true, false or a node)"
    );
}

#[test]
fn every_node_exports_to_json_schema() {
    let params = ParameterSchema::new([
        (
            "s",
            Node::string()
                .min_length(1)
                .max_length(3)
                .pattern("^a")
                .format("uuid")
                .describe("S")
                .required(),
        ),
        ("n", Node::number().minimum(0).exclusive_maximum(10)),
        ("i", Node::integer()),
        ("b", Node::boolean()),
        ("z", Node::null()),
        ("a", Node::any()),
        ("l", Node::literal("x")),
        ("arr", Node::array(Node::string()).min_items(1).max_items(2)),
        (
            "o",
            Node::object([("k", Node::string().required())]).additional_schema(Node::integer()),
        ),
        ("u", Node::union([Node::string(), Node::integer()])),
    ]);
    assert_eq!(
        params.to_json_schema(),
        json!({
            "type": "object",
            "properties": {
                "s": {"type": "string", "minLength": 1, "maxLength": 3, "pattern": "^a", "format": "uuid", "description": "S"},
                "n": {"type": "number", "minimum": 0, "exclusiveMaximum": 10},
                "i": {"type": "integer"},
                "b": {"type": "boolean"},
                "z": {"type": "null"},
                "a": {},
                "l": {"const": "x"},
                "arr": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
                "o": {"type": "object", "properties": {"k": {"type": "string"}}, "required": ["k"], "additionalProperties": {"type": "integer"}},
                "u": {"oneOf": [{"type": "string"}, {"type": "integer"}]}
            },
            "required": ["s"],
            "additionalProperties": true
        })
    );
}
