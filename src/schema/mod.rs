//! Tool schemas: the node language, its JSON form, validation with JSON paths,
//! and export to JSON Schema.
//!
//! Two grammars share one node language:
//! - [`ParameterSchema`] (a tool's arguments): a map of property name to [`Node`]; the root
//!   is an implicit, open object (unknown keys are allowed at the root);
//! - [`ValueSchema`] (a tool's canonical output): one [`Node`], of any type.
//!
//! Definition errors (an invalid pattern, an object node without `additionalProperties`, a
//! reference to a missing definition, …) are found by `check`, which registration runs.

mod export;
mod format;
pub(crate) mod hint;
mod import;
mod node;
mod parse;
mod pattern;
pub(crate) mod validate;

use std::collections::HashSet;
use std::fmt;

use indexmap::IndexMap;
use serde_json::{Map, Value};

pub use export::JSON_SCHEMA_DIALECT;
pub use format::KNOWN_FORMATS;
pub use import::ImportWarning;
pub use node::{
    Additional, ArraySpec, Conditional, Contains, Node, NodeKind, NumberSpec, ObjectSpec, Pattern,
    StringSpec, TupleSpec,
};
pub use pattern::{MAX_BACKTRACK_STEPS, MAX_BACKTRACKING_INPUT};
pub use validate::{MAX_VIOLATIONS, ValidationReport, Violation};

use crate::value::PathSeg;
use validate::Validator;

/// A mistake in a schema definition, found when the schema is checked (at registration).
///
/// `path` names the position in the definition, e.g. `parameters.items.items.pattern`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct DefinitionError {
    /// Where in the definition.
    pub path: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl DefinitionError {
    pub(crate) fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        DefinitionError {
            path: path.into(),
            message: message.into(),
        }
    }

    /// The same error with `prefix` put before its path (`tools[3].` + `parameters.x`).
    pub fn prefixed(mut self, prefix: &str) -> Self {
        self.path = format!("{prefix}{}", self.path);
        self
    }
}

/// The arguments schema of a tool: properties of an implicit
/// root object that stays open.
///
/// ```
/// use codemode::schema::{Node, ParameterSchema};
/// let params = ParameterSchema::new([
///     ("path", Node::string().describe("File to read.").required()),
///     ("limit", Node::integer().minimum(1)),
/// ]);
/// params.check().unwrap();
/// let err = params.validate(&serde_json::json!({"path": 3})).unwrap_err();
/// assert_eq!(err.to_string(), "args.path: expected string, got number");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ParameterSchema {
    root: ObjectSpec,
    /// Further conditions on the whole arguments object (an imported root `oneOf`, …).
    also: Vec<Node>,
    defs: IndexMap<String, Node>,
    /// The root's description and kept keywords (imported schemas).
    annotations: Option<Box<Map<String, Value>>>,
}

impl Default for ParameterSchema {
    fn default() -> Self {
        ParameterSchema {
            root: ObjectSpec {
                properties: IndexMap::new(),
                additional: None,
                min_properties: None,
                max_properties: None,
                pattern_properties: Vec::new(),
                property_names: None,
                dependent_required: Vec::new(),
                dependent_schemas: Vec::new(),
            },
            also: Vec::new(),
            defs: IndexMap::new(),
            annotations: None,
        }
    }
}

impl ParameterSchema {
    /// Parameters with these properties (in this order).
    pub fn new<K: Into<String>>(properties: impl IntoIterator<Item = (K, Node)>) -> Self {
        let mut schema = ParameterSchema::default();
        schema.root.properties = properties.into_iter().map(|(k, v)| (k.into(), v)).collect();
        schema
    }

    /// A tool that takes no declared arguments.
    pub fn empty() -> Self {
        Self::default()
    }

    /// The same parameters with one more property; `None` when `name` is declared.
    pub(crate) fn with_property(mut self, name: &str, node: Node) -> Option<Self> {
        if self.root.properties.contains_key(name) {
            return None;
        }
        self.root.properties.insert(name.to_owned(), node);
        Some(self)
    }

    /// Adds named definitions that [`Node::reference`] nodes point to.
    pub fn with_definitions<K: Into<String>>(
        mut self,
        defs: impl IntoIterator<Item = (K, Node)>,
    ) -> Self {
        self.defs
            .extend(defs.into_iter().map(|(k, v)| (k.into(), v)));
        self
    }

    /// Parses the JSON form: an object mapping property names to nodes.
    ///
    /// # Errors
    /// A [`DefinitionError`] whose path starts with `parameters`.
    pub fn from_json(value: &Value) -> Result<Self, DefinitionError> {
        let schema = ParameterSchema::new(parse::parse_properties(value, "parameters")?);
        schema.check()?;
        Ok(schema)
    }

    /// Imports a JSON Schema that describes the arguments object (as MCP servers and model
    /// APIs write them): see the import rules in [`ImportWarning`]'s module docs. The root
    /// must describe an object (or nothing: `{}` takes any arguments).
    ///
    /// # Errors
    /// A [`DefinitionError`] whose path starts with `input_schema`.
    pub fn from_json_schema(schema: &Value) -> Result<(Self, Vec<ImportWarning>), DefinitionError> {
        let mut importer = import::Importer::new(schema, "input_schema");
        let root = importer.node(schema, "input_schema")?;
        let imported = importer.finish()?;
        let mut out = ParameterSchema {
            defs: imported.defs,
            ..ParameterSchema::default()
        };
        out.root.additional = Some(Additional::Allow);
        let Node {
            kind,
            description,
            default: _,
            required: _,
            extra,
            implied,
        } = root;
        let mut annotations: Map<String, Value> = extra.map(|b| *b).unwrap_or_default();
        annotations.remove("$schema");
        annotations.remove("$id");
        if let Some(d) = description {
            annotations.insert("description".into(), Value::String(d));
        }
        out.annotations = (!annotations.is_empty()).then(|| Box::new(annotations));
        let not_object = |what: &str| {
            DefinitionError::new(
                "input_schema",
                format!("the arguments schema must describe an object, but it describes {what}"),
            )
        };
        match kind {
            NodeKind::Object(spec) => out.root = spec,
            NodeKind::Any => {}
            NodeKind::AllOf(parts) => {
                let mut root_taken = false;
                for part in parts {
                    match part.kind {
                        NodeKind::Object(spec)
                            if !root_taken
                                && part.description.is_none()
                                && part.extra.is_none() =>
                        {
                            out.root = spec;
                            root_taken = true;
                        }
                        _ => out.also.push(part),
                    }
                }
            }
            kind @ (NodeKind::Union(_)
            | NodeKind::AnyOf(_)
            | NodeKind::Ref(_)
            | NodeKind::Not(_)
            | NodeKind::Conditional(_)) => {
                out.also.push(Node::of(kind));
            }
            // `{"minItems": 1}` at the root: its keywords hold only for arrays, so every
            // arguments object passes; kept as a condition so nothing is lost.
            other if implied => {
                let mut node = Node::of(other);
                node.implied = true;
                out.also.push(node);
            }
            other => return Err(not_object(Node::of(other).type_name())),
        }
        out.check()?;
        Ok((out, imported.warnings))
    }

    /// The declared properties.
    pub fn properties(&self) -> &IndexMap<String, Node> {
        &self.root.properties
    }

    /// Further conditions on the whole arguments object (from an imported root `oneOf`,
    /// `anyOf` or `allOf`).
    pub fn conditions(&self) -> &[Node] {
        &self.also
    }

    /// What the root does with unknown keys: `None` (the node language) and
    /// `Some(Allow)` keep it open.
    pub fn additional_properties(&self) -> Option<&Additional> {
        self.root.additional.as_ref()
    }

    /// The named definitions.
    pub fn definitions(&self) -> &IndexMap<String, Node> {
        &self.defs
    }

    /// Finds definition errors.
    ///
    /// # Errors
    /// The first [`DefinitionError`] found, its path starting with `parameters`.
    pub fn check(&self) -> Result<(), DefinitionError> {
        let checker = Checker { defs: &self.defs };
        checker.object_spec(&self.root, "parameters", true)?;
        for (i, n) in self.also.iter().enumerate() {
            checker.node(n, &format!("parameters.allOf[{i}]"))?;
        }
        checker.defs("parameters")
    }

    /// The root object: its properties and whether it takes other keys.
    pub(crate) fn root_spec(&self) -> &ObjectSpec {
        &self.root
    }

    /// The named definitions references point to.
    pub(crate) fn defs(&self) -> &IndexMap<String, Node> {
        &self.defs
    }

    /// Validates arguments; the root path in messages is `args`.
    ///
    /// # Errors
    /// A [`ValidationReport`] listing every violation (up to [`MAX_VIOLATIONS`]).
    pub fn validate(&self, arguments: &Value) -> Result<(), ValidationReport> {
        let mut v = Validator::new(&self.defs);
        let root = PathSeg::Root("args");
        match arguments {
            Value::Object(map) => {
                v.check_object(&self.root, map, &root, 0);
                for n in &self.also {
                    v.check(n, arguments, &root, 1);
                }
            }
            other => {
                return Err(ValidationReport {
                    violations: vec![Violation {
                        path: "args".into(),
                        message: format!(
                            "expected an object of named arguments, got {}",
                            crate::value::json_type_name(other)
                        ),
                    }],
                    omitted: 0,
                });
            }
        }
        v.finish()
    }

    /// Exports to JSON Schema draft 2020-12: `{"type": "object", "properties": …,
    /// "required": […], "additionalProperties": true}`, plus `$defs` when there are
    /// definitions.
    pub fn to_json_schema(&self) -> Value {
        let mut out = Map::new();
        export::object_members(&mut out, &self.root);
        match self.also.as_slice() {
            [] => {}
            [one]
                if matches!(one.kind, NodeKind::Union(_) | NodeKind::AnyOf(_))
                    && one.description.is_none()
                    && one.extra.is_none() =>
            {
                if let Value::Object(m) = one.to_json_schema() {
                    out.extend(m);
                }
            }
            parts => {
                out.insert(
                    "allOf".into(),
                    parts.iter().map(Node::to_json_schema).collect(),
                );
            }
        }
        if let Some(a) = &self.annotations {
            for (k, v) in a.iter() {
                out.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        export::with_defs(Value::Object(out), &self.defs)
    }
}

/// The canonical output schema of a tool: one node.
///
/// ```
/// use codemode::schema::{Node, ValueSchema};
/// let out = ValueSchema::new(Node::array(Node::string()));
/// assert!(out.validate(&serde_json::json!(["a", "b"])).is_ok());
/// assert_eq!(
///     out.validate(&serde_json::json!(["a", 2])).unwrap_err().to_string(),
///     "output[1]: expected string, got number"
/// );
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ValueSchema {
    root: Node,
    defs: IndexMap<String, Node>,
}

impl Default for ValueSchema {
    /// `any`: every JSON value.
    fn default() -> Self {
        ValueSchema::new(Node::any())
    }
}

impl ValueSchema {
    /// An output schema whose root is `root`.
    pub fn new(root: Node) -> Self {
        ValueSchema {
            root,
            defs: IndexMap::new(),
        }
    }

    /// Adds named definitions that [`Node::reference`] nodes point to.
    pub fn with_definitions<K: Into<String>>(
        mut self,
        defs: impl IntoIterator<Item = (K, Node)>,
    ) -> Self {
        self.defs
            .extend(defs.into_iter().map(|(k, v)| (k.into(), v)));
        self
    }

    /// Parses the JSON form of one node.
    ///
    /// # Errors
    /// A [`DefinitionError`] whose path starts with `output`.
    pub fn from_json(value: &Value) -> Result<Self, DefinitionError> {
        let schema = ValueSchema::new(parse::parse_node(value, "output")?);
        schema.check()?;
        Ok(schema)
    }

    /// Imports a JSON Schema (see [`ParameterSchema::from_json_schema`] for the rules).
    ///
    /// # Errors
    /// A [`DefinitionError`] whose path starts with `output_schema`.
    pub fn from_json_schema(schema: &Value) -> Result<(Self, Vec<ImportWarning>), DefinitionError> {
        let mut importer = import::Importer::new(schema, "output_schema");
        let mut root = importer.node(schema, "output_schema")?;
        let imported = importer.finish()?;
        if let Some(extra) = root.extra.as_mut() {
            extra.remove("$schema");
            extra.remove("$id");
            if extra.is_empty() {
                root.extra = None;
            }
        }
        let out = ValueSchema {
            root,
            defs: imported.defs,
        };
        out.check()?;
        Ok((out, imported.warnings))
    }

    /// The root node.
    pub fn root(&self) -> &Node {
        &self.root
    }

    /// The named definitions.
    pub fn definitions(&self) -> &IndexMap<String, Node> {
        &self.defs
    }

    /// Finds definition errors.
    ///
    /// # Errors
    /// The first [`DefinitionError`] found, its path starting with `output`.
    pub fn check(&self) -> Result<(), DefinitionError> {
        let checker = Checker { defs: &self.defs };
        checker.node(&self.root, "output")?;
        checker.defs("output")
    }

    /// Validates a value; the root path in messages is `output`.
    ///
    /// # Errors
    /// A [`ValidationReport`] listing every violation (up to [`MAX_VIOLATIONS`]).
    pub fn validate(&self, value: &Value) -> Result<(), ValidationReport> {
        self.validate_at(value, "output")
    }

    /// Validates a value, naming the root `root` in messages.
    ///
    /// # Errors
    /// As [`ValueSchema::validate`].
    pub fn validate_at(&self, value: &Value, root: &str) -> Result<(), ValidationReport> {
        let mut v = Validator::new(&self.defs);
        v.check(&self.root, value, &PathSeg::Root(root), 0);
        v.finish()
    }

    /// Exports to JSON Schema draft 2020-12 (with `$defs` when there are definitions).
    pub fn to_json_schema(&self) -> Value {
        export::with_defs(export::node_to_json_schema(&self.root), &self.defs)
    }
}

impl Node {
    /// Parses a node from its JSON form, e.g.
    /// `{"type": "array", "items": {"type": "string"}, "maxItems": 3}`.
    ///
    /// # Errors
    /// A [`DefinitionError`] naming the path below `node`.
    pub fn from_json(value: &Value) -> Result<Node, DefinitionError> {
        parse::parse_node(value, "node")
    }

    /// Exports this node to JSON Schema draft 2020-12 (references stay `#/$defs/…`).
    pub fn to_json_schema(&self) -> Value {
        export::node_to_json_schema(self)
    }
}

struct Checker<'a> {
    defs: &'a IndexMap<String, Node>,
}

impl Checker<'_> {
    fn defs(&self, root: &str) -> Result<(), DefinitionError> {
        for (name, node) in self.defs {
            let path = format!("{root}.$defs.{name}");
            self.node(node, &path)?;
            let mut seen = HashSet::new();
            seen.insert(name.as_str());
            self.unguarded(node, &mut seen, &path)?;
        }
        Ok(())
    }

    /// Refuses a definition that refers to itself without passing through an array or
    /// object (`A = A`, `A = oneOf[A, string]`): validating it would never terminate.
    fn unguarded<'n>(
        &'n self,
        node: &'n Node,
        seen: &mut HashSet<&'n str>,
        path: &str,
    ) -> Result<(), DefinitionError> {
        match &node.kind {
            NodeKind::Ref(name) => {
                if !seen.insert(name.as_str()) {
                    return Err(DefinitionError::new(
                        path,
                        format!(
                            "definition `{name}` refers to itself without an array or object in between"
                        ),
                    ));
                }
                if let Some(target) = self.defs.get(name) {
                    self.unguarded(target, seen, path)?;
                }
                seen.remove(name.as_str());
                Ok(())
            }
            NodeKind::Union(b) | NodeKind::AnyOf(b) | NodeKind::AllOf(b) => {
                for n in b {
                    self.unguarded(n, seen, path)?;
                }
                Ok(())
            }
            NodeKind::Not(n) => self.unguarded(n, seen, path),
            NodeKind::Conditional(c) => {
                for n in [Some(&c.condition), c.then.as_ref(), c.otherwise.as_ref()]
                    .into_iter()
                    .flatten()
                {
                    self.unguarded(n, seen, path)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Checks an object's members; `root` is the implicit parameters object, whose
    /// property paths have no `.properties` and whose `additionalProperties` may be unset.
    fn object_spec(&self, o: &ObjectSpec, path: &str, root: bool) -> Result<(), DefinitionError> {
        match &o.additional {
            None if !root => {
                return Err(DefinitionError::new(
                    path,
                    "an object node must declare additionalProperties (true, false or a node)",
                ));
            }
            Some(Additional::Schema(n)) => {
                self.node(n, &format!("{path}.additionalProperties"))?;
            }
            _ => {}
        }
        for (k, n) in &o.properties {
            let mut p = if root {
                path.to_owned()
            } else {
                format!("{path}.properties")
            };
            let _ = crate::value::write_key(&mut p, k);
            self.node(n, &p)?;
        }
        for (pattern, n) in &o.pattern_properties {
            let mut p = format!("{path}.patternProperties");
            let _ = crate::value::write_key(&mut p, pattern.source());
            if let Some(err) = pattern.error() {
                return Err(DefinitionError::new(
                    p,
                    format!(
                        "invalid ECMAScript regular expression /{}/: {err}",
                        pattern.source()
                    ),
                ));
            }
            self.node(n, &p)?;
        }
        if let Some(n) = &o.property_names {
            self.node(n, &format!("{path}.propertyNames"))?;
        }
        for (k, n) in &o.dependent_schemas {
            let mut p = format!("{path}.dependentSchemas");
            let _ = crate::value::write_key(&mut p, k);
            self.node(n, &p)?;
        }
        Ok(())
    }

    fn node(&self, node: &Node, path: &str) -> Result<(), DefinitionError> {
        match &node.kind {
            NodeKind::String(s) => {
                if let Some(p) = &s.pattern
                    && let Some(err) = p.error()
                {
                    return Err(DefinitionError::new(
                        format!("{path}.pattern"),
                        format!(
                            "invalid ECMAScript regular expression /{}/: {err}",
                            p.source()
                        ),
                    ));
                }
                if let (Some(a), Some(b)) = (s.min_length, s.max_length)
                    && a > b
                {
                    return Err(DefinitionError::new(
                        path,
                        format!("minLength {a} exceeds maxLength {b}"),
                    ));
                }
                if let Some(values) = &s.enum_values
                    && values.is_empty()
                {
                    return Err(DefinitionError::new(
                        format!("{path}.enum"),
                        "an empty enum accepts nothing",
                    ));
                }
            }
            NodeKind::Number(n) | NodeKind::Integer(n) => {
                if let (Some(a), Some(b)) = (&n.minimum, &n.maximum)
                    && crate::value::Num::of(a)
                        .cmp(crate::value::Num::of(b))
                        .is_some_and(|o| o.is_gt())
                {
                    return Err(DefinitionError::new(
                        path,
                        format!("minimum {a} exceeds maximum {b}"),
                    ));
                }
                if let Some(m) = &n.multiple_of
                    && crate::value::Num::of(m)
                        .cmp(crate::value::Num::Decimal {
                            mantissa: 0,
                            exponent: 0,
                        })
                        .is_none_or(|o| o.is_le())
                {
                    return Err(DefinitionError::new(
                        format!("{path}.multipleOf"),
                        "must be greater than 0",
                    ));
                }
            }
            NodeKind::Array(a) => {
                if let (Some(x), Some(y)) = (a.min_items, a.max_items)
                    && x > y
                {
                    return Err(DefinitionError::new(
                        path,
                        format!("minItems {x} exceeds maxItems {y}"),
                    ));
                }
                self.node(&a.items, &format!("{path}.items"))?;
                if let Some(c) = &a.contains {
                    self.node(&c.node, &format!("{path}.contains"))?;
                }
            }
            NodeKind::Tuple(t) => {
                for (i, n) in t.prefix.iter().enumerate() {
                    self.node(n, &format!("{path}.prefixItems[{i}]"))?;
                }
                if let Some(rest) = &t.rest {
                    self.node(rest, &format!("{path}.items"))?;
                }
                if let Some(c) = &t.contains {
                    self.node(&c.node, &format!("{path}.contains"))?;
                }
            }
            NodeKind::Object(o) => self.object_spec(o, path, false)?,
            NodeKind::Not(n) => self.node(n, &format!("{path}.not"))?,
            NodeKind::Conditional(c) => {
                self.node(&c.condition, &format!("{path}.if"))?;
                if let Some(n) = &c.then {
                    self.node(n, &format!("{path}.then"))?;
                }
                if let Some(n) = &c.otherwise {
                    self.node(n, &format!("{path}.else"))?;
                }
            }
            NodeKind::Union(b) | NodeKind::AnyOf(b) | NodeKind::AllOf(b) => {
                let key = match node.kind {
                    NodeKind::Union(_) => "oneOf",
                    NodeKind::AnyOf(_) => "anyOf",
                    _ => "allOf",
                };
                if b.is_empty() {
                    return Err(DefinitionError::new(
                        format!("{path}.{key}"),
                        "a union needs at least one branch",
                    ));
                }
                for (i, n) in b.iter().enumerate() {
                    self.node(n, &format!("{path}.{key}[{i}]"))?;
                }
            }
            NodeKind::Ref(name) => {
                if !self.defs.contains_key(name) {
                    let known: Vec<&str> = self.defs.keys().map(String::as_str).collect();
                    return Err(DefinitionError::new(
                        path,
                        format!(
                            "refers to an unknown definition `{name}` (defined: {})",
                            if known.is_empty() {
                                "none".to_owned()
                            } else {
                                known.join(", ")
                            }
                        ),
                    ));
                }
            }
            NodeKind::Boolean
            | NodeKind::Null
            | NodeKind::Any
            | NodeKind::Never
            | NodeKind::Literal(_) => {}
        }
        Ok(())
    }
}

impl fmt::Display for ParameterSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_json_schema())
    }
}
