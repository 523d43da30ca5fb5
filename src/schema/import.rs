//! Import of JSON Schema into nodes, for tools whose schemas arrive as
//! JSON Schema: MCP servers, OpenAI and Anthropic tool definitions, manifests that give
//! `input_schema`.
//!
//! Understood (JSON Schema draft 2020-12 and draft-07): `type` (a name or an array of
//! names), `properties`, `patternProperties`, `additionalProperties`, `propertyNames`,
//! `required`, `dependentRequired`, `dependentSchemas`, draft-07 `dependencies`,
//! `minProperties`, `maxProperties`, `items` (a schema, or the draft-07 array form with
//! `additionalItems`), `prefixItems`, `contains`, `minContains`, `maxContains`, `minItems`,
//! `maxItems`, `uniqueItems` (arrays and tuples), `enum`, `const`, `oneOf`, `anyOf`,
//! `allOf`, `not`, `if`/`then`/`else`, the OpenAPI `nullable`, local `$ref` (to `$defs`,
//! `definitions` or any JSON Pointer in the document, recursive references included),
//! `minLength`, `maxLength`, `pattern`, `format`, `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum` (numbers, or draft-4 booleans), `multipleOf`; counts may be written
//! `1.0`. Annotations (`title`, `description`, `default`, `examples`, `$comment`,
//! `deprecated`, `readOnly`, `writeOnly`, `$schema`, `$id` at the root, `$anchor`,
//! `contentMediaType`, `contentEncoding`) are kept.
//!
//! Refused at registration, with the keyword's path: `unevaluatedProperties`,
//! `unevaluatedItems`, `$dynamicRef`, `$dynamicAnchor`, `$recursiveRef`,
//! `$recursiveAnchor`, `$id` below the root, `$ref` to an anchor (`#name`) or to another
//! document.
//!
//! Any other keyword is kept for display and export and named in an [`ImportWarning`]: it
//! is never silently dropped from the model-facing schema, and never enforced.
//!
//! `format` follows each draft's default: with `$schema` naming draft-07 (or earlier) it
//! is asserted for the formats codemode knows ([`KNOWN_FORMATS`](super::KNOWN_FORMATS);
//! another name is kept for display and named in a warning); with 2019-09, 2020-12 or no
//! `$schema` it is an annotation (2020-12 §7.2.1), shown to the model and not checked.
//!
//! Keywords imply no type when validating (JSON Schema 2020-12 §7.6.1): `{"minItems": 1}`
//! accepts `""` and `5`. Such a node remembers its likely type for display and exports
//! without `type`.
//!
//! Deliberate differences from JSON Schema (each pinned by a test):
//! - `nullable: true` (OpenAPI 3.0) allows `null`;
//! - draft-07 `$ref` is read with its sibling keywords (2020-12 rules), where draft-07
//!   ignores the siblings.

use std::collections::HashMap;

use indexmap::IndexMap;
use serde_json::{Map, Number, Value};

use super::DefinitionError;
use super::format::KNOWN_FORMATS;
use super::node::{
    Additional, ArraySpec, Node, NodeKind, NumberSpec, ObjectSpec, Pattern, StringSpec, TupleSpec,
};

/// A keyword the import kept for display but does not enforce.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportWarning {
    /// Where in the imported schema, e.g. `input_schema.properties.x.patternProperties`.
    pub path: String,
    /// What was kept and what that means.
    pub message: String,
}

impl std::fmt::Display for ImportWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

const ANNOTATIONS: &[&str] = &[
    "title",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$schema",
    "$id",
    "$anchor",
    "contentMediaType",
    "contentEncoding",
];

/// Keywords refused at registration: validating without them would accept values the
/// schema refuses (or the reverse), and they are not implemented.
const REFUSED: &[(&str, &str)] = &[
    (
        "unevaluatedProperties",
        "`unevaluatedProperties` (JSON Schema 2020-12 §11.3) is not supported; use `additionalProperties` beside `properties`/`patternProperties`",
    ),
    (
        "unevaluatedItems",
        "`unevaluatedItems` (JSON Schema 2020-12 §11.2) is not supported; use `items` beside `prefixItems`",
    ),
    (
        "$dynamicRef",
        "`$dynamicRef` (JSON Schema 2020-12 §8.2.3.2) is not supported; use `$ref` to a JSON Pointer (#/…)",
    ),
    (
        "$dynamicAnchor",
        "`$dynamicAnchor` (JSON Schema 2020-12 §8.2.2) is not supported",
    ),
    (
        "$recursiveRef",
        "`$recursiveRef` (draft 2019-09) is not supported; use `$ref` to a JSON Pointer (#/…)",
    ),
    (
        "$recursiveAnchor",
        "`$recursiveAnchor` (draft 2019-09) is not supported",
    ),
];

const STRUCTURAL: &[&str] = &[
    "type",
    "patternProperties",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "contains",
    "minContains",
    "maxContains",
    "if",
    "then",
    "else",
    "description",
    "default",
    "properties",
    "required",
    "additionalProperties",
    "minProperties",
    "maxProperties",
    "items",
    "additionalItems",
    "prefixItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "enum",
    "const",
    "oneOf",
    "anyOf",
    "allOf",
    "not",
    "nullable",
    "$ref",
    "$defs",
    "definitions",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];

const OBJECT_KEYS: &[&str] = &[
    "properties",
    "patternProperties",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "required",
    "additionalProperties",
    "minProperties",
    "maxProperties",
];
const ARRAY_KEYS: &[&str] = &[
    "items",
    "additionalItems",
    "prefixItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
];
const STRING_KEYS: &[&str] = &["minLength", "maxLength", "pattern", "format"];
const NUMBER_KEYS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];

/// The result of an import: the definitions the references point to, and the warnings.
pub(crate) struct Imported {
    pub(crate) defs: IndexMap<String, Node>,
    pub(crate) warnings: Vec<ImportWarning>,
}

pub(crate) struct Importer<'a> {
    document: &'a Value,
    root_path: String,
    defs: IndexMap<String, Node>,
    /// JSON Pointer → definition name.
    names: HashMap<String, String>,
    pending: Vec<(String, String)>,
    warnings: Vec<ImportWarning>,
    /// Whether `format` is an assertion: the document's `$schema` is draft-07 or earlier.
    assert_format: bool,
}

/// Whether a document's `$schema` names draft-07 or an earlier draft, where `format` may
/// assert (draft-07 §7.2); 2019-09 and 2020-12 make it an annotation by default (2020-12
/// §7.2.1), and so does a schema without `$schema` (MCP's default dialect is 2020-12).
fn asserts_format(document: &Value) -> bool {
    let Some(uri) = document.get("$schema").and_then(Value::as_str) else {
        return false;
    };
    ["draft-07", "draft-06", "draft-04", "draft-03"]
        .iter()
        .any(|draft| uri.contains(&format!("json-schema.org/{draft}/")))
}

impl<'a> Importer<'a> {
    pub(crate) fn new(document: &'a Value, root_path: &str) -> Self {
        Importer {
            document,
            root_path: root_path.to_owned(),
            defs: IndexMap::new(),
            names: HashMap::new(),
            pending: Vec::new(),
            warnings: Vec::new(),
            assert_format: asserts_format(document),
        }
    }

    /// Imports the definitions referenced so far (and those they reference).
    pub(crate) fn finish(mut self) -> Result<Imported, DefinitionError> {
        while let Some((name, pointer)) = self.pending.pop() {
            let Some(target) = resolve_pointer(self.document, &pointer) else {
                return Err(DefinitionError::new(
                    format!("{}{}", self.root_path, pointer_path(&pointer)),
                    format!("$ref #{pointer} points to nothing in the schema"),
                ));
            };
            let path = format!("{}{}", self.root_path, pointer_path(&pointer));
            let node = self.node(target, &path)?;
            self.defs.insert(name, node);
        }
        // Definitions sorted by name, so the same schema always gives the same nodes.
        let mut defs = self.defs;
        defs.sort_keys();
        Ok(Imported {
            defs,
            warnings: self.warnings,
        })
    }

    fn warn(&mut self, path: String, message: String) {
        self.warnings.push(ImportWarning { path, message });
    }

    fn reference(&mut self, reference: &str, path: &str) -> Result<Node, DefinitionError> {
        let Some(pointer) = reference.strip_prefix('#') else {
            return Err(DefinitionError::new(
                path,
                format!(
                    "$ref {reference:?} is not local: only references inside the schema (#/…) are supported"
                ),
            ));
        };
        let pointer = percent_decode(pointer);
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(DefinitionError::new(
                path,
                format!(
                    "$ref {reference:?} names an anchor (`$anchor`, JSON Schema 2020-12 §8.2.2), which is not supported: use a JSON Pointer (#/…)"
                ),
            ));
        }
        if let Some(name) = self.names.get(&pointer) {
            return Ok(Node::reference(name.clone()));
        }
        let base = ["/$defs/", "/definitions/"]
            .iter()
            .find_map(|p| pointer.strip_prefix(p))
            .filter(|rest| !rest.contains('/'))
            .map(|rest| rest.replace("~1", "/").replace("~0", "~"))
            .unwrap_or_else(|| {
                if pointer.is_empty() {
                    "Root".to_owned()
                } else {
                    pointer.trim_start_matches('/').replace('/', "_")
                }
            });
        let mut name = base.clone();
        let mut n = 2;
        while self.names.values().any(|v| *v == name) {
            name = format!("{base}{n}");
            n += 1;
        }
        self.names.insert(pointer.clone(), name.clone());
        self.pending.push((name.clone(), pointer));
        Ok(Node::reference(name))
    }

    /// Imports one schema.
    pub(crate) fn node(&mut self, schema: &Value, path: &str) -> Result<Node, DefinitionError> {
        let map = match schema {
            Value::Bool(true) => return Ok(Node::any()),
            Value::Bool(false) => return Ok(Node::never()),
            Value::Object(map) => map,
            other => {
                return Err(DefinitionError::new(
                    path,
                    format!(
                        "expected a schema (an object or a boolean), got {}",
                        crate::value::json_type_name(other)
                    ),
                ));
            }
        };
        let at = |key: &str| format!("{path}.{key}");
        for (key, why) in REFUSED {
            if map.contains_key(*key) {
                return Err(DefinitionError::new(at(key), *why));
            }
        }
        if map.contains_key("$id") && path != self.root_path {
            return Err(DefinitionError::new(
                at("$id"),
                "`$id` below the root (JSON Schema 2020-12 §8.2.1) is not supported: it changes how references inside it resolve",
            ));
        }
        let mut parts: Vec<Node> = Vec::new();

        if let Some(r) = map.get("$ref") {
            let Some(r) = r.as_str() else {
                return Err(DefinitionError::new(at("$ref"), "expected a string"));
            };
            parts.push(self.reference(r, &at("$ref"))?);
        }
        for (key, exact) in [("oneOf", true), ("anyOf", false)] {
            if let Some(list) = map.get(key) {
                let branches = self.list(list, &at(key))?;
                parts.push(Node::of(if exact {
                    NodeKind::Union(branches)
                } else {
                    NodeKind::AnyOf(branches)
                }));
            }
        }
        if let Some(list) = map.get("allOf") {
            let branches = self.list(list, &at("allOf"))?;
            parts.push(merge_all_of(branches));
        }
        if let Some(not) = map.get("not") {
            if not.as_object().is_some_and(Map::is_empty) || *not == Value::Bool(true) {
                parts.push(Node::never());
            } else {
                let inner = self.node(not, &at("not"))?;
                parts.push(Node::of(NodeKind::Not(Box::new(inner))));
            }
        }
        if let Some(condition) = map.get("if") {
            let condition = self.node(condition, &at("if"))?;
            let then = match map.get("then") {
                None => None,
                Some(n) => Some(self.node(n, &at("then"))?),
            };
            let otherwise = match map.get("else") {
                None => None,
                Some(n) => Some(self.node(n, &at("else"))?),
            };
            if then.is_some() || otherwise.is_some() {
                parts.push(Node::of(NodeKind::Conditional(Box::new(
                    super::node::Conditional {
                        condition,
                        then,
                        otherwise,
                    },
                ))));
            }
        }

        let (types, implied) = self.types(map, path)?;
        let mut typed: Vec<Node> = types
            .iter()
            .map(|t| self.typed(t, map, path))
            .collect::<Result<_, _>>()?;
        for n in &mut typed {
            n.implied = implied;
        }
        let mut type_node = match typed.len() {
            0 => None,
            1 => typed.into_iter().next(),
            // Implied types each hold for their own type only: all of them apply.
            _ if implied => Some(Node::all_of(typed)),
            _ => Some(Node::any_of(typed)),
        };
        let values: Option<Vec<Value>> = match (map.get("const"), map.get("enum")) {
            (Some(c), _) => Some(vec![c.clone()]),
            (None, Some(Value::Array(values))) => {
                if values.is_empty() {
                    return Err(DefinitionError::new(
                        at("enum"),
                        "an empty enum accepts nothing",
                    ));
                }
                Some(values.clone())
            }
            (None, Some(_)) => return Err(DefinitionError::new(at("enum"), "expected an array")),
            (None, None) => None,
        };
        match values {
            None => parts.extend(type_node),
            Some(values) => {
                let is_const = map.contains_key("const");
                // `type` and `enum` must both hold: keep the values the type accepts.
                let kept: Vec<Value> = match &type_node {
                    None => values,
                    Some(t) => values.into_iter().filter(|v| accepts(t, v)).collect(),
                };
                let set_on_type = !is_const
                    && !kept.is_empty()
                    && match type_node.as_ref().map(|n| &n.kind) {
                        Some(NodeKind::String(_)) => kept.iter().all(Value::is_string),
                        Some(NodeKind::Number(_) | NodeKind::Integer(_)) => {
                            kept.iter().all(Value::is_number)
                        }
                        _ => false,
                    };
                if set_on_type && let Some(node) = type_node.as_mut() {
                    // The values are all of the node's type: nothing else passes.
                    node.implied = false;
                    match &mut node.kind {
                        NodeKind::String(s) => {
                            s.enum_values = Some(
                                kept.iter()
                                    .filter_map(|v| v.as_str().map(str::to_owned))
                                    .collect(),
                            );
                        }
                        NodeKind::Number(n) | NodeKind::Integer(n) => {
                            n.enum_values =
                                Some(kept.iter().filter_map(|v| v.as_number().cloned()).collect());
                        }
                        _ => {}
                    }
                    parts.extend(type_node);
                } else if is_const {
                    parts.push(match kept.into_iter().next() {
                        Some(v) => Node::literal(v),
                        None => Node::never(),
                    });
                } else {
                    parts.push(literal_set(kept));
                }
            }
        }
        if map.get("nullable").and_then(Value::as_bool) == Some(true) {
            let inner = combine(std::mem::take(&mut parts));
            parts.push(Node::any_of([inner, Node::null()]));
        }

        let mut node = combine(parts);
        if let Some(d) = map.get("description") {
            match d {
                Value::String(s) => node.description = Some(s.clone()),
                _ => return Err(DefinitionError::new(at("description"), "expected a string")),
            }
        }
        node.default = map.get("default").cloned();
        for (key, value) in map {
            if STRUCTURAL.contains(&key.as_str()) {
                continue;
            }
            if !ANNOTATIONS.contains(&key.as_str()) {
                self.warn(
                    at(key),
                    format!("`{key}` is kept for display but not enforced"),
                );
            }
            node.extra
                .get_or_insert_with(Default::default)
                .insert(key.clone(), value.clone());
        }
        Ok(node)
    }

    fn list(&mut self, value: &Value, path: &str) -> Result<Vec<Node>, DefinitionError> {
        let Value::Array(items) = value else {
            return Err(DefinitionError::new(path, "expected an array of schemas"));
        };
        if items.is_empty() {
            return Err(DefinitionError::new(path, "expected at least one schema"));
        }
        items
            .iter()
            .enumerate()
            .map(|(i, s)| self.node(s, &format!("{path}[{i}]")))
            .collect()
    }

    /// The types a schema declares, or implies by its keywords when it declares none (then
    /// the second value is `true`: each implied type's keywords hold for values of that type
    /// only, JSON Schema 2020-12 §7.6.1).
    fn types(
        &self,
        map: &Map<String, Value>,
        path: &str,
    ) -> Result<(Vec<String>, bool), DefinitionError> {
        const KNOWN: &[&str] = &[
            "string", "number", "integer", "boolean", "null", "array", "object",
        ];
        match map.get("type") {
            Some(Value::String(t)) => {
                if !KNOWN.contains(&t.as_str()) {
                    return Err(DefinitionError::new(
                        format!("{path}.type"),
                        format!("unknown type {t:?} (expected one of {})", KNOWN.join(", ")),
                    ));
                }
                Ok((vec![t.clone()], false))
            }
            Some(Value::Array(list)) => {
                let mut out = Vec::new();
                for (i, t) in list.iter().enumerate() {
                    match t.as_str() {
                        Some(t) if KNOWN.contains(&t) => {
                            if !out.iter().any(|o| o == t) {
                                out.push(t.to_owned());
                            }
                        }
                        _ => {
                            return Err(DefinitionError::new(
                                format!("{path}.type[{i}]"),
                                format!("expected one of {}", KNOWN.join(", ")),
                            ));
                        }
                    }
                }
                Ok((out, false))
            }
            Some(_) => Err(DefinitionError::new(
                format!("{path}.type"),
                "expected a type name or an array of them",
            )),
            None => {
                let has = |keys: &[&str]| keys.iter().any(|k| map.contains_key(*k));
                let mut out = Vec::new();
                if has(OBJECT_KEYS) {
                    out.push("object".to_owned());
                }
                if has(ARRAY_KEYS) {
                    out.push("array".to_owned());
                }
                if has(STRING_KEYS) {
                    out.push("string".to_owned());
                }
                if has(NUMBER_KEYS) {
                    out.push("number".to_owned());
                }
                Ok((out, true))
            }
        }
    }

    fn typed(
        &mut self,
        ty: &str,
        map: &Map<String, Value>,
        path: &str,
    ) -> Result<Node, DefinitionError> {
        let at = |key: &str| format!("{path}.{key}");
        let u64_of = |key: &str| count_of(map, key, path);
        let number_of = |key: &str| -> Result<Option<Number>, DefinitionError> {
            match map.get(key) {
                None | Some(Value::Bool(_)) => Ok(None),
                Some(Value::Number(n)) => Ok(Some(n.clone())),
                Some(_) => Err(DefinitionError::new(at(key), "expected a number")),
            }
        };
        Ok(match ty {
            "string" => {
                let pattern = match map.get("pattern") {
                    None => None,
                    Some(Value::String(p)) => Some(Pattern::new(p.clone())),
                    Some(_) => {
                        return Err(DefinitionError::new(at("pattern"), "expected a string"));
                    }
                };
                if let Some(p) = &pattern
                    && let Some(err) = p.error()
                {
                    return Err(DefinitionError::new(
                        at("pattern"),
                        format!(
                            "invalid ECMAScript regular expression /{}/: {err}",
                            p.source()
                        ),
                    ));
                }
                let format = map.get("format").and_then(Value::as_str).map(str::to_owned);
                if let Some(name) = &format
                    && self.assert_format
                    && !KNOWN_FORMATS.contains(&name.as_str())
                {
                    self.warn(
                        at("format"),
                        format!(
                            "format {name:?} is kept for display but not checked (checked: {})",
                            KNOWN_FORMATS.join(", ")
                        ),
                    );
                }
                Node::of(NodeKind::String(StringSpec {
                    min_length: u64_of("minLength")?,
                    max_length: u64_of("maxLength")?,
                    pattern,
                    format_asserted: self.assert_format && format.is_some(),
                    format,
                    enum_values: None,
                }))
            }
            "number" | "integer" => {
                let mut spec = NumberSpec {
                    minimum: number_of("minimum")?,
                    maximum: number_of("maximum")?,
                    exclusive_minimum: number_of("exclusiveMinimum")?,
                    exclusive_maximum: number_of("exclusiveMaximum")?,
                    multiple_of: number_of("multipleOf")?,
                    enum_values: None,
                };
                // Draft 4: `exclusiveMinimum: true` makes `minimum` exclusive.
                if map.get("exclusiveMinimum") == Some(&Value::Bool(true)) {
                    spec.exclusive_minimum = spec.minimum.take();
                }
                if map.get("exclusiveMaximum") == Some(&Value::Bool(true)) {
                    spec.exclusive_maximum = spec.maximum.take();
                }
                Node::of(if ty == "integer" {
                    NodeKind::Integer(spec)
                } else {
                    NodeKind::Number(spec)
                })
            }
            "boolean" => Node::boolean(),
            "null" => Node::null(),
            "array" => self.array(map, path)?,
            "object" => self.object(map, path)?,
            _ => Node::any(),
        })
    }

    fn array(&mut self, map: &Map<String, Value>, path: &str) -> Result<Node, DefinitionError> {
        let at = |key: &str| format!("{path}.{key}");
        let min_items = count_of(map, "minItems", path)?;
        let max_items = count_of(map, "maxItems", path)?;
        let unique_items = match map.get("uniqueItems") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(DefinitionError::new(
                    at("uniqueItems"),
                    "expected true or false",
                ));
            }
        };
        let contains = match map.get("contains") {
            None => None,
            Some(c) => Some(Box::new(super::node::Contains {
                node: self.node(c, &at("contains"))?,
                min: count_of(map, "minContains", path)?.unwrap_or(1),
                max: count_of(map, "maxContains", path)?,
            })),
        };
        let tuple = |importer: &mut Self,
                     prefix: &Value,
                     prefix_key: &str,
                     rest: Option<&Value>,
                     rest_key: &str,
                     contains: Option<Box<super::node::Contains>>| {
            let prefix = importer.list(prefix, &at(prefix_key))?;
            let rest = match rest {
                None | Some(Value::Bool(true)) => Some(Box::new(Node::any())),
                Some(Value::Bool(false)) => None,
                Some(r) => Some(Box::new(importer.node(r, &at(rest_key))?)),
            };
            Ok::<Node, DefinitionError>(Node::of(NodeKind::Tuple(TupleSpec {
                prefix,
                rest,
                min_items,
                max_items,
                unique_items,
                contains,
            })))
        };
        if let Some(prefix) = map.get("prefixItems") {
            return tuple(
                self,
                prefix,
                "prefixItems",
                map.get("items"),
                "items",
                contains,
            );
        }
        match map.get("items") {
            Some(prefix @ Value::Array(_)) => tuple(
                self,
                prefix,
                "items",
                map.get("additionalItems"),
                "additionalItems",
                contains,
            ),
            items => {
                let items = match items {
                    None => Node::any(),
                    Some(i) => self.node(i, &at("items"))?,
                };
                Ok(Node::of(NodeKind::Array(ArraySpec {
                    items: Box::new(items),
                    min_items,
                    max_items,
                    unique_items,
                    contains,
                })))
            }
        }
    }

    fn object(&mut self, map: &Map<String, Value>, path: &str) -> Result<Node, DefinitionError> {
        let at = |key: &str| format!("{path}.{key}");
        let keyed = |key: &str, name: &str| {
            let mut p = at(key);
            let _ = crate::value::write_key(&mut p, name);
            p
        };
        let schemas_of = |key: &str| -> Result<Option<&Map<String, Value>>, DefinitionError> {
            match map.get(key) {
                None => Ok(None),
                Some(Value::Object(m)) => Ok(Some(m)),
                Some(_) => Err(DefinitionError::new(
                    at(key),
                    "expected an object of schemas",
                )),
            }
        };
        let mut properties = IndexMap::new();
        if let Some(props) = schemas_of("properties")? {
            for (name, schema) in props {
                let node = self.node(schema, &keyed("properties", name))?;
                properties.insert(name.clone(), node);
            }
        }
        let mut pattern_properties = Vec::new();
        if let Some(patterns) = schemas_of("patternProperties")? {
            for (source, schema) in patterns {
                let p = keyed("patternProperties", source);
                let pattern = Pattern::new(source.clone());
                if let Some(err) = pattern.error() {
                    return Err(DefinitionError::new(
                        p,
                        format!("invalid ECMAScript regular expression /{source}/: {err}"),
                    ));
                }
                let node = self.node(schema, &p)?;
                pattern_properties.push((pattern, node));
            }
        }
        let property_names = match map.get("propertyNames") {
            None => None,
            Some(n) => Some(Box::new(self.node(n, &at("propertyNames"))?)),
        };
        let mut dependent_required: Vec<(String, Vec<String>)> = Vec::new();
        let mut dependent_schemas: Vec<(String, Node)> = Vec::new();
        // Draft-07 `dependencies` (§6.5.7) holds both forms; 2020-12 split it in two.
        for key in ["dependencies", "dependentRequired", "dependentSchemas"] {
            let Some(entries) = map.get(key) else {
                continue;
            };
            let Value::Object(entries) = entries else {
                return Err(DefinitionError::new(at(key), "expected an object"));
            };
            for (name, v) in entries {
                let p = keyed(key, name);
                match v {
                    Value::Array(names) if key != "dependentSchemas" => {
                        let mut list = Vec::with_capacity(names.len());
                        for (i, n) in names.iter().enumerate() {
                            let Some(n) = n.as_str() else {
                                return Err(DefinitionError::new(
                                    format!("{p}[{i}]"),
                                    "expected a property name",
                                ));
                            };
                            list.push(n.to_owned());
                        }
                        dependent_required.push((name.clone(), list));
                    }
                    _ if key == "dependentRequired" => {
                        return Err(DefinitionError::new(
                            p,
                            "expected an array of property names",
                        ));
                    }
                    schema => {
                        let node = self.node(schema, &p)?;
                        dependent_schemas.push((name.clone(), node));
                    }
                }
            }
        }
        let additional = match map.get("additionalProperties") {
            None | Some(Value::Bool(true)) => Additional::Allow,
            Some(Value::Bool(false)) => Additional::Deny,
            Some(schema) => {
                Additional::Schema(Box::new(self.node(schema, &at("additionalProperties"))?))
            }
        };
        if let Some(required) = map.get("required") {
            let Value::Array(names) = required else {
                return Err(DefinitionError::new(
                    at("required"),
                    "expected an array of property names",
                ));
            };
            for (i, name) in names.iter().enumerate() {
                let Some(name) = name.as_str() else {
                    return Err(DefinitionError::new(
                        format!("{path}.required[{i}]"),
                        "expected a property name",
                    ));
                };
                if let Some(p) = properties.get_mut(name) {
                    p.required = true;
                    continue;
                }
                // A required key that is not declared: it takes the schemas of the patterns
                // it matches (§10.3.2.2), or else `additionalProperties` (§10.3.2.3).
                let matching: Vec<Node> = pattern_properties
                    .iter()
                    .filter(|(p, _)| p.is_match(name))
                    .map(|(_, n)| n.clone())
                    .collect();
                let node = if !matching.is_empty() {
                    combine(matching)
                } else {
                    match &additional {
                        Additional::Deny => {
                            return Err(DefinitionError::new(
                                format!("{path}.required[{i}]"),
                                format!(
                                    "required property {name:?} is not in `properties`, matches no `patternProperties`, and additionalProperties is false, so no object can match"
                                ),
                            ));
                        }
                        Additional::Allow => Node::any(),
                        Additional::Schema(n) => (**n).clone(),
                    }
                };
                properties.insert(name.to_owned(), node.required());
            }
        }
        Ok(Node::of(NodeKind::Object(ObjectSpec {
            properties,
            additional: Some(additional),
            min_properties: count_of(map, "minProperties", path)?,
            max_properties: count_of(map, "maxProperties", path)?,
            pattern_properties,
            property_names,
            dependent_required,
            dependent_schemas,
        })))
    }
}

/// A count keyword (`minItems`, `maxProperties`, `minContains`, …): a non-negative
/// integer, which JSON Schema lets be written `1.0` (2020-12 §6.4: "a non-negative
/// integer"; a number with a zero fractional part is an integer, §4.2.2).
fn count_of(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<u64>, DefinitionError> {
    match map.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .or_else(|| {
                v.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19)
                    .map(|f| f as u64)
            })
            .map(Some)
            .ok_or_else(|| {
                DefinitionError::new(format!("{path}.{key}"), "expected a non-negative integer")
            }),
    }
}

/// One node from the parts a schema's keywords made: nothing is `any`, one is itself,
/// several must all hold.
/// The node of a finite set of values: a string or number enum when they are all of that
/// type, one literal, or an `anyOf` of literals.
fn literal_set(values: Vec<Value>) -> Node {
    if values.is_empty() {
        return Node::never();
    }
    if values.iter().all(Value::is_string) {
        return Node::string()
            .string_enum(values.iter().filter_map(|v| v.as_str().map(str::to_owned)));
    }
    if values.iter().all(Value::is_number) {
        let mut node = Node::number();
        if let NodeKind::Number(n) = &mut node.kind {
            n.enum_values = Some(
                values
                    .iter()
                    .filter_map(|v| v.as_number().cloned())
                    .collect(),
            );
        }
        return node;
    }
    if values.len() == 1 {
        return Node::literal(values.into_iter().next().unwrap_or(Value::Null));
    }
    Node::any_of(values.into_iter().map(Node::literal))
}

/// Whether a typed node accepts a value (references are taken as accepting: an enum value
/// is kept rather than dropped when its type cannot be decided here).
fn accepts(node: &Node, value: &Value) -> bool {
    let defs = IndexMap::new();
    let mut v = super::validate::Validator::new(&defs);
    v.check(node, value, &crate::value::PathSeg::Root(""), 0) || contains_ref(node)
}

fn contains_ref(node: &Node) -> bool {
    match &node.kind {
        NodeKind::Ref(_) => true,
        NodeKind::Array(a) => contains_ref(&a.items),
        NodeKind::Tuple(t) => {
            t.prefix.iter().any(contains_ref) || t.rest.as_deref().is_some_and(contains_ref)
        }
        NodeKind::Object(o) => {
            o.properties.values().any(contains_ref)
                || matches!(&o.additional, Some(Additional::Schema(n)) if contains_ref(n))
        }
        NodeKind::Union(b) | NodeKind::AnyOf(b) | NodeKind::AllOf(b) => b.iter().any(contains_ref),
        NodeKind::Not(_) | NodeKind::Conditional(_) => true,
        _ => false,
    }
}

fn combine(mut parts: Vec<Node>) -> Node {
    match parts.len() {
        0 => Node::any(),
        1 => parts.remove(0),
        _ => Node::all_of(parts),
    }
}

/// `allOf` of open objects with distinct properties merges into one object (what tool
/// authors mean by it, and equivalent when every branch is open); anything else stays an
/// `allOf`.
fn merge_all_of(branches: Vec<Node>) -> Node {
    let mergeable = branches.iter().all(|b| {
        matches!(&b.kind, NodeKind::Object(o) if matches!(o.additional, Some(Additional::Allow))
            && o.min_properties.is_none() && o.max_properties.is_none()
            && o.pattern_properties.is_empty() && o.property_names.is_none()
            && o.dependent_required.is_empty() && o.dependent_schemas.is_empty())
            && b.description.is_none()
            && b.default.is_none()
            && b.extra.is_none()
    });
    if !mergeable || branches.len() < 2 {
        return combine(branches);
    }
    let mut properties: IndexMap<String, Node> = IndexMap::new();
    for b in &branches {
        if let NodeKind::Object(o) = &b.kind {
            for (k, v) in &o.properties {
                if properties.contains_key(k) {
                    return combine(branches);
                }
                properties.insert(k.clone(), v.clone());
            }
        }
    }
    let mut merged = Node::of(NodeKind::Object(ObjectSpec {
        properties,
        additional: Some(Additional::Allow),
        min_properties: None,
        max_properties: None,
        pattern_properties: Vec::new(),
        property_names: None,
        dependent_required: Vec::new(),
        dependent_schemas: Vec::new(),
    }));
    // One branch that requires an object makes the merge require one.
    merged.implied = branches.iter().all(|b| b.implied);
    merged
}

/// Follows a JSON Pointer (RFC 6901) inside `document`.
fn resolve_pointer<'v>(document: &'v Value, pointer: &str) -> Option<&'v Value> {
    if pointer.is_empty() {
        return Some(document);
    }
    let mut current = document;
    for token in pointer.strip_prefix('/')?.split('/') {
        let token = token.replace("~1", "/").replace("~0", "~");
        current = match current {
            Value::Object(m) => m.get(&token)?,
            Value::Array(a) => a.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

fn pointer_path(pointer: &str) -> String {
    pointer
        .split('/')
        .filter(|t| !t.is_empty())
        .map(|t| format!(".{}", t.replace("~1", "/").replace("~0", "~")))
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(s.get(i + 1..i + 3).unwrap_or("zz"), 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_owned())
}
