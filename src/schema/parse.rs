//! The JSON form of the node language, as manifests and embedders write it.
//!
//! Parsing is strict: an unknown keyword is a definition error naming its path, except the
//! annotation keywords `title`, `examples`, `$comment`, `deprecated`, `readOnly` and
//! `writeOnly`, which are kept for display and export.

use indexmap::IndexMap;
use serde_json::{Map, Number, Value};

use super::DefinitionError;
use super::node::{
    Additional, ArraySpec, Node, NodeKind, NumberSpec, ObjectSpec, StringSpec, TupleSpec,
};

const ANNOTATIONS: &[&str] = &[
    "title",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Parses the properties map of a ParameterSchemaSpec: `{name: node, ...}`.
pub(crate) fn parse_properties(
    value: &Value,
    path: &str,
) -> Result<IndexMap<String, Node>, DefinitionError> {
    let Value::Object(map) = value else {
        return Err(DefinitionError::new(
            path,
            format!(
                "expected an object mapping property names to nodes, got {}",
                crate::value::json_type_name(value)
            ),
        ));
    };
    let mut out = IndexMap::with_capacity(map.len());
    for (name, node) in map {
        let mut p = path.to_owned();
        let _ = crate::value::write_key(&mut p, name);
        out.insert(name.clone(), parse_node(node, &p)?);
    }
    Ok(out)
}

/// Parses one node from its JSON form.
pub(crate) fn parse_node(value: &Value, path: &str) -> Result<Node, DefinitionError> {
    let Value::Object(map) = value else {
        return Err(DefinitionError::new(
            path,
            format!(
                "expected a node object like {{\"type\": \"string\"}}, got {}",
                crate::value::json_type_name(value)
            ),
        ));
    };
    let at = |key: &str| format!("{path}.{key}");
    let Some(type_value) = map.get("type") else {
        return Err(DefinitionError::new(
            path,
            "missing \"type\" (one of string, number, integer, boolean, null, any, literal, array, tuple, object, union)",
        ));
    };
    let Some(ty) = type_value.as_str() else {
        return Err(DefinitionError::new(
            at("type"),
            "expected a type name string",
        ));
    };
    let mut used: Vec<&str> = vec!["type", "description", "default", "required"];
    let kind = match ty {
        "string" => {
            used.extend(["minLength", "maxLength", "pattern", "format", "enum"]);
            let mut spec = StringSpec {
                min_length: get_u64(map, "minLength", path)?,
                max_length: get_u64(map, "maxLength", path)?,
                ..StringSpec::default()
            };
            if let Some(p) = map.get("pattern") {
                let Some(p) = p.as_str() else {
                    return Err(DefinitionError::new(
                        at("pattern"),
                        "expected a regular expression string",
                    ));
                };
                spec.pattern = Some(super::node::Pattern::new(p));
            }
            if let Some(f) = map.get("format") {
                let Some(f) = f.as_str() else {
                    return Err(DefinitionError::new(
                        at("format"),
                        "expected a format name string",
                    ));
                };
                spec.format = Some(f.to_owned());
                spec.format_asserted = true;
            }
            if let Some(e) = map.get("enum") {
                let values = e.as_array().ok_or_else(|| {
                    DefinitionError::new(at("enum"), "expected an array of strings")
                })?;
                let mut out = Vec::with_capacity(values.len());
                for (i, v) in values.iter().enumerate() {
                    let s = v.as_str().ok_or_else(|| {
                        DefinitionError::new(
                            format!("{path}.enum[{i}]"),
                            "a string node's enum holds strings only",
                        )
                    })?;
                    out.push(s.to_owned());
                }
                spec.enum_values = Some(out);
            }
            NodeKind::String(spec)
        }
        "number" | "integer" => {
            used.extend([
                "minimum",
                "maximum",
                "exclusiveMinimum",
                "exclusiveMaximum",
                "multipleOf",
                "enum",
            ]);
            let spec = NumberSpec {
                minimum: get_number(map, "minimum", path)?,
                maximum: get_number(map, "maximum", path)?,
                exclusive_minimum: get_number(map, "exclusiveMinimum", path)?,
                exclusive_maximum: get_number(map, "exclusiveMaximum", path)?,
                multiple_of: get_number(map, "multipleOf", path)?,
                enum_values: match map.get("enum") {
                    None => None,
                    Some(Value::Array(values)) => {
                        let mut out = Vec::with_capacity(values.len());
                        for (i, v) in values.iter().enumerate() {
                            let Value::Number(n) = v else {
                                return Err(DefinitionError::new(
                                    format!("{path}.enum[{i}]"),
                                    "a number node's enum holds numbers only",
                                ));
                            };
                            out.push(n.clone());
                        }
                        Some(out)
                    }
                    Some(_) => {
                        return Err(DefinitionError::new(
                            at("enum"),
                            "expected an array of numbers",
                        ));
                    }
                },
            };
            if ty == "integer" {
                NodeKind::Integer(spec)
            } else {
                NodeKind::Number(spec)
            }
        }
        "boolean" => NodeKind::Boolean,
        "null" => NodeKind::Null,
        "any" => NodeKind::Any,
        "literal" => {
            used.push("value");
            let Some(v) = map.get("value") else {
                return Err(DefinitionError::new(path, "a literal node needs \"value\""));
            };
            NodeKind::Literal(v.clone())
        }
        "array" => {
            used.extend(["items", "minItems", "maxItems", "uniqueItems"]);
            let Some(items) = map.get("items") else {
                return Err(DefinitionError::new(
                    path,
                    "an array node needs \"items\" (a node)",
                ));
            };
            NodeKind::Array(ArraySpec {
                items: Box::new(parse_node(items, &at("items"))?),
                min_items: get_u64(map, "minItems", path)?,
                max_items: get_u64(map, "maxItems", path)?,
                unique_items: get_bool(map, "uniqueItems", path)?.unwrap_or(false),
                contains: None,
            })
        }
        "tuple" => {
            used.extend(["prefixItems", "items", "minItems", "maxItems"]);
            let Some(Value::Array(prefix)) = map.get("prefixItems") else {
                return Err(DefinitionError::new(
                    path,
                    "a tuple node needs \"prefixItems\" (an array of nodes)",
                ));
            };
            let mut nodes = Vec::with_capacity(prefix.len());
            for (i, p) in prefix.iter().enumerate() {
                nodes.push(parse_node(p, &format!("{path}.prefixItems[{i}]"))?);
            }
            let rest = match map.get("items") {
                None | Some(Value::Bool(false)) => None,
                Some(Value::Bool(true)) => Some(Box::new(Node::any())),
                Some(n) => Some(Box::new(parse_node(n, &at("items"))?)),
            };
            NodeKind::Tuple(TupleSpec {
                prefix: nodes,
                rest,
                min_items: get_u64(map, "minItems", path)?,
                max_items: get_u64(map, "maxItems", path)?,
                unique_items: false,
                contains: None,
            })
        }
        "object" => {
            used.extend([
                "properties",
                "additionalProperties",
                "minProperties",
                "maxProperties",
            ]);
            let properties = match map.get("properties") {
                None => IndexMap::new(),
                Some(p) => parse_properties(p, &at("properties"))?,
            };
            let additional = match map.get("additionalProperties") {
                None => None,
                Some(Value::Bool(true)) => Some(Additional::Allow),
                Some(Value::Bool(false)) => Some(Additional::Deny),
                Some(n) => Some(Additional::Schema(Box::new(parse_node(
                    n,
                    &at("additionalProperties"),
                )?))),
            };
            NodeKind::Object(ObjectSpec {
                properties,
                additional,
                min_properties: get_u64(map, "minProperties", path)?,
                max_properties: get_u64(map, "maxProperties", path)?,
                pattern_properties: Vec::new(),
                property_names: None,
                dependent_required: Vec::new(),
                dependent_schemas: Vec::new(),
            })
        }
        "union" => {
            used.extend(["oneOf", "anyOf"]);
            let (key, exact) = match (map.get("oneOf"), map.get("anyOf")) {
                (Some(_), None) => ("oneOf", true),
                (None, Some(_)) => ("anyOf", false),
                _ => {
                    return Err(DefinitionError::new(
                        path,
                        "a union node needs exactly one of \"oneOf\" (exact-one) or \"anyOf\" (at-least-one)",
                    ));
                }
            };
            let Some(Value::Array(branches)) = map.get(key) else {
                return Err(DefinitionError::new(at(key), "expected an array of nodes"));
            };
            let mut nodes = Vec::with_capacity(branches.len());
            for (i, b) in branches.iter().enumerate() {
                nodes.push(parse_node(b, &format!("{path}.{key}[{i}]"))?);
            }
            if exact {
                NodeKind::Union(nodes)
            } else {
                NodeKind::AnyOf(nodes)
            }
        }
        other => {
            return Err(DefinitionError::new(
                at("type"),
                format!(
                    "unknown node type \"{other}\" (expected one of string, number, integer, boolean, null, any, literal, array, tuple, object, union)"
                ),
            ));
        }
    };
    let mut extra: Option<Box<Map<String, Value>>> = None;
    for (key, v) in map {
        if used.contains(&key.as_str()) {
            continue;
        }
        if ANNOTATIONS.contains(&key.as_str()) {
            extra
                .get_or_insert_with(Default::default)
                .insert(key.clone(), v.clone());
            continue;
        }
        return Err(DefinitionError::new(
            at(key),
            format!("unknown keyword for a {ty} node"),
        ));
    }
    let description = match map.get("description") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(DefinitionError::new(at("description"), "expected a string")),
    };
    Ok(Node {
        kind,
        description,
        default: map.get("default").cloned(),
        required: get_bool(map, "required", path)?.unwrap_or(false),
        extra,
        implied: false,
    })
}

fn get_u64(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<u64>, DefinitionError> {
    match map.get(key) {
        None => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            DefinitionError::new(format!("{path}.{key}"), "expected a non-negative integer")
        }),
    }
}

fn get_bool(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<bool>, DefinitionError> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(DefinitionError::new(
            format!("{path}.{key}"),
            "expected true or false",
        )),
    }
}

fn get_number(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<Number>, DefinitionError> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::Number(n)) => Ok(Some(n.clone())),
        Some(_) => Err(DefinitionError::new(
            format!("{path}.{key}"),
            "expected a number",
        )),
    }
}
