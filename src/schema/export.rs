//! Export of nodes to JSON Schema draft 2020-12, for native tool
//! calling and for MCP.
//!
//! `format` exports as the keyword; whether it asserts does not travel: 2020-12 makes it an
//! annotation unless a dialect's `$vocabulary` asserts it (§7.2.1), so an importer of the
//! export (codemode's included) reads it as an annotation. The tool's own validation, on
//! the side that exported it, still asserts it.

use indexmap::IndexMap;
use serde_json::{Map, Value, json};

use super::node::{Additional, Contains, Node, NodeKind, ObjectSpec};

/// The `$schema` URI of the exported dialect.
pub const JSON_SCHEMA_DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

pub(crate) fn node_to_json_schema(node: &Node) -> Value {
    let mut out = Map::new();
    match &node.kind {
        NodeKind::String(s) => {
            out.insert("type".into(), "string".into());
            if let Some(n) = s.min_length {
                out.insert("minLength".into(), n.into());
            }
            if let Some(n) = s.max_length {
                out.insert("maxLength".into(), n.into());
            }
            if let Some(p) = &s.pattern {
                out.insert("pattern".into(), p.source().into());
            }
            if let Some(f) = &s.format {
                out.insert("format".into(), f.clone().into());
            }
            if let Some(e) = &s.enum_values {
                out.insert(
                    "enum".into(),
                    e.iter().cloned().map(Value::String).collect(),
                );
            }
        }
        NodeKind::Number(n) | NodeKind::Integer(n) => {
            out.insert("type".into(), node.type_name().into());
            let pairs = [
                ("minimum", &n.minimum),
                ("maximum", &n.maximum),
                ("exclusiveMinimum", &n.exclusive_minimum),
                ("exclusiveMaximum", &n.exclusive_maximum),
                ("multipleOf", &n.multiple_of),
            ];
            for (key, v) in pairs {
                if let Some(v) = v {
                    out.insert(key.into(), Value::Number(v.clone()));
                }
            }
            if let Some(e) = &n.enum_values {
                out.insert(
                    "enum".into(),
                    e.iter().cloned().map(Value::Number).collect(),
                );
            }
        }
        NodeKind::Boolean => {
            out.insert("type".into(), "boolean".into());
        }
        NodeKind::Null => {
            out.insert("type".into(), "null".into());
        }
        NodeKind::Any => {}
        NodeKind::Literal(v) => {
            out.insert("const".into(), v.clone());
        }
        NodeKind::Array(a) => {
            out.insert("type".into(), "array".into());
            out.insert("items".into(), node_to_json_schema(&a.items));
            if let Some(n) = a.min_items {
                out.insert("minItems".into(), n.into());
            }
            if let Some(n) = a.max_items {
                out.insert("maxItems".into(), n.into());
            }
            if a.unique_items {
                out.insert("uniqueItems".into(), true.into());
            }
            contains(&mut out, a.contains.as_deref());
        }
        NodeKind::Tuple(t) => {
            out.insert("type".into(), "array".into());
            out.insert(
                "prefixItems".into(),
                t.prefix.iter().map(node_to_json_schema).collect(),
            );
            out.insert(
                "items".into(),
                match &t.rest {
                    None => false.into(),
                    Some(n) => node_to_json_schema(n),
                },
            );
            if let Some(n) = t.min_items {
                out.insert("minItems".into(), n.into());
            }
            if let Some(n) = t.max_items {
                out.insert("maxItems".into(), n.into());
            }
            if t.unique_items {
                out.insert("uniqueItems".into(), true.into());
            }
            contains(&mut out, t.contains.as_deref());
        }
        NodeKind::Object(o) => object_members(&mut out, o),
        NodeKind::Not(n) => {
            out.insert("not".into(), node_to_json_schema(n));
        }
        NodeKind::Conditional(c) => {
            out.insert("if".into(), node_to_json_schema(&c.condition));
            if let Some(n) = &c.then {
                out.insert("then".into(), node_to_json_schema(n));
            }
            if let Some(n) = &c.otherwise {
                out.insert("else".into(), node_to_json_schema(n));
            }
        }
        NodeKind::Union(branches) => {
            out.insert(
                "oneOf".into(),
                branches.iter().map(node_to_json_schema).collect(),
            );
        }
        NodeKind::AnyOf(branches) => {
            out.insert(
                "anyOf".into(),
                branches.iter().map(node_to_json_schema).collect(),
            );
        }
        NodeKind::AllOf(parts) => {
            out.insert(
                "allOf".into(),
                parts.iter().map(node_to_json_schema).collect(),
            );
        }
        NodeKind::Never => {
            out.insert("not".into(), json!({}));
        }
        NodeKind::Ref(name) => {
            out.insert(
                "$ref".into(),
                format!("#/$defs/{}", escape_pointer(name)).into(),
            );
        }
    }
    if node.implied {
        // The type came from the keywords (JSON Schema 2020-12 §7.6.1): writing it would
        // refuse values of other types that the node accepts.
        out.remove("type");
    }
    annotations(&mut out, node);
    Value::Object(out)
}

fn contains(out: &mut Map<String, Value>, c: Option<&Contains>) {
    if let Some(c) = c {
        out.insert("contains".into(), node_to_json_schema(&c.node));
        if c.min != 1 {
            out.insert("minContains".into(), c.min.into());
        }
        if let Some(n) = c.max {
            out.insert("maxContains".into(), n.into());
        }
    }
}

/// Writes `type`, `properties`, `required`, `additionalProperties` and the other object
/// keywords of an object.
pub(crate) fn object_members(out: &mut Map<String, Value>, o: &ObjectSpec) {
    out.insert("type".into(), "object".into());
    let mut props = Map::with_capacity(o.properties.len());
    let mut required = Vec::new();
    for (k, v) in &o.properties {
        props.insert(k.clone(), node_to_json_schema(v));
        if v.required {
            required.push(Value::String(k.clone()));
        }
    }
    out.insert("properties".into(), Value::Object(props));
    if !required.is_empty() {
        out.insert("required".into(), Value::Array(required));
    }
    if !o.pattern_properties.is_empty() {
        out.insert(
            "patternProperties".into(),
            o.pattern_properties
                .iter()
                .map(|(p, n)| (p.source().to_owned(), node_to_json_schema(n)))
                .collect::<Map<String, Value>>()
                .into(),
        );
    }
    match &o.additional {
        None | Some(Additional::Allow) => {
            out.insert("additionalProperties".into(), true.into());
        }
        Some(Additional::Deny) => {
            out.insert("additionalProperties".into(), false.into());
        }
        Some(Additional::Schema(n)) => {
            out.insert("additionalProperties".into(), node_to_json_schema(n));
        }
    }
    if let Some(n) = &o.property_names {
        out.insert("propertyNames".into(), node_to_json_schema(n));
    }
    if let Some(n) = o.min_properties {
        out.insert("minProperties".into(), n.into());
    }
    if let Some(n) = o.max_properties {
        out.insert("maxProperties".into(), n.into());
    }
    if !o.dependent_required.is_empty() {
        out.insert(
            "dependentRequired".into(),
            o.dependent_required
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect::<Map<String, Value>>()
                .into(),
        );
    }
    if !o.dependent_schemas.is_empty() {
        out.insert(
            "dependentSchemas".into(),
            o.dependent_schemas
                .iter()
                .map(|(k, n)| (k.clone(), node_to_json_schema(n)))
                .collect::<Map<String, Value>>()
                .into(),
        );
    }
}

fn annotations(out: &mut Map<String, Value>, node: &Node) {
    if let Some(d) = &node.description {
        out.insert("description".into(), d.clone().into());
    }
    if let Some(d) = &node.default {
        out.insert("default".into(), d.clone());
    }
    if let Some(extra) = &node.extra {
        for (k, v) in extra.iter() {
            out.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
}

/// Adds `$defs` (and nothing else) to an exported root.
pub(crate) fn with_defs(mut root: Value, defs: &IndexMap<String, Node>) -> Value {
    if defs.is_empty() {
        return root;
    }
    if let Value::Object(map) = &mut root {
        let defs: Map<String, Value> = defs
            .iter()
            .map(|(k, v)| (k.clone(), node_to_json_schema(v)))
            .collect();
        map.insert("$defs".into(), Value::Object(defs));
    } else {
        // A boolean root cannot carry `$defs`; wrap it.
        root = json!({ "allOf": [root] });
        return with_defs(root, defs);
    }
    root
}

/// Escapes a definition name for a JSON Pointer (RFC 6901): `~` → `~0`, `/` → `~1`.
pub(crate) fn escape_pointer(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}
