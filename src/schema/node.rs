//! The node language of tool schemas: one [`Node`] per schema position.

use indexmap::IndexMap;
use serde_json::{Map, Value};

pub use super::pattern::Pattern;

/// One node of a tool schema.
///
/// A node is a [`NodeKind`] plus the annotations every node may carry: `description`,
/// `default` and, as an object property, `required`. Build nodes with the constructors
/// ([`Node::string`], [`Node::object`], …) and the chaining setters, or parse them from their
/// JSON form with [`Node::from_json`].
///
/// Building never fails: mistakes such as an invalid `pattern` or an object without
/// `additionalProperties` are *definition errors*, reported when the schema is checked —
/// at the latest when the tool is registered.
///
/// ```
/// use codemode::schema::Node;
/// let item = Node::object([
///     ("name", Node::string().min_length(1).required()),
///     ("tags", Node::array(Node::string()).max_items(8)),
/// ])
/// .additional_properties(false)
/// .describe("One item.");
/// assert_eq!(item.to_json_schema()["properties"]["name"]["minLength"], 1);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub(crate) kind: NodeKind,
    pub(crate) description: Option<String>,
    pub(crate) default: Option<Value>,
    pub(crate) required: bool,
    /// Keywords kept for display and export but not enforced: annotations such as `title`,
    /// and (on import) JSON Schema keywords this language does not understand.
    pub(crate) extra: Option<Box<Map<String, Value>>>,
    /// The node's type was implied by its keywords, not declared (an imported
    /// `{"minItems": 1}`): values of other JSON types pass, as JSON Schema 2020-12 §7.6.1
    /// says of every type-specific keyword ("if the instance is not of this type, the
    /// keyword evaluates to true"). Export leaves `type` out for such a node.
    pub(crate) implied: bool,
}

/// What a [`Node`] accepts.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum NodeKind {
    /// A JSON string.
    String(StringSpec),
    /// Any JSON number.
    Number(NumberSpec),
    /// A JSON number whose mathematical value is an integer (`1.0` counts, as in JSON Schema).
    Integer(NumberSpec),
    /// `true` or `false`.
    Boolean,
    /// `null`.
    Null,
    /// Any JSON value.
    Any,
    /// Exactly this JSON value (compared structurally; numbers by mathematical value).
    Literal(Value),
    /// A JSON array of `items`.
    Array(ArraySpec),
    /// A JSON array whose first elements have fixed schemas (JSON Schema `prefixItems`).
    Tuple(TupleSpec),
    /// A JSON object.
    Object(ObjectSpec),
    /// Exactly one branch must accept the value (JSON Schema `oneOf`).
    Union(Vec<Node>),
    /// At least one branch must accept the value (JSON Schema `anyOf`).
    AnyOf(Vec<Node>),
    /// Every part must accept the value (JSON Schema `allOf`; also what import makes of a
    /// schema with both its own keywords and `oneOf`/`anyOf`/`$ref`).
    AllOf(Vec<Node>),
    /// No value is allowed (the JSON Schema `false`).
    Never,
    /// A reference to a named definition of the enclosing schema (`$ref` to `$defs`).
    Ref(String),
    /// The value must not match the node (JSON Schema 2020-12 §10.2.1.4 `not`).
    Not(Box<Node>),
    /// `if`/`then`/`else` (JSON Schema 2020-12 §10.2.2): when the value matches `if` it
    /// must match `then`, otherwise `else` (an absent branch accepts everything).
    Conditional(Box<Conditional>),
}

/// The three schemas of a [`NodeKind::Conditional`].
#[derive(Clone, Debug, PartialEq)]
pub struct Conditional {
    /// The condition; its failure is not a violation.
    pub condition: Node,
    /// What a value that matches the condition must match (`None`: anything).
    pub then: Option<Node>,
    /// What a value that does not match the condition must match (`None`: anything).
    pub otherwise: Option<Node>,
}

/// `contains` with its bounds (JSON Schema 2020-12 §10.3.1.3 and §6.4.4–6.4.5): between
/// `min` and `max` elements must match `node`.
#[derive(Clone, Debug, PartialEq)]
pub struct Contains {
    /// The schema counted elements match.
    pub node: Node,
    /// Fewest matching elements (`minContains`; default 1, 0 makes `contains` always hold).
    pub min: u64,
    /// Most matching elements (`maxContains`), if bounded.
    pub max: Option<u64>,
}

/// Constraints of a `string` node. Lengths count Unicode code points.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StringSpec {
    /// Fewest code points allowed.
    pub min_length: Option<u64>,
    /// Most code points allowed.
    pub max_length: Option<u64>,
    /// An ECMAScript regular expression the string must match somewhere (unanchored, as in
    /// JSON Schema).
    pub pattern: Option<Pattern>,
    /// A format name (`date-time`, `date`, `time`, `uri`, `email`, `uuid`, …), checked when
    /// [`format_asserted`](Self::format_asserted) and the name is one of
    /// [`KNOWN_FORMATS`](crate::schema::KNOWN_FORMATS); otherwise an annotation shown to
    /// the model.
    pub format: Option<String>,
    /// Whether [`format`](Self::format) is an assertion. [`Node::format`] and definitions
    /// assert it; the JSON Schema import asserts it for draft-07 and earlier and keeps it an
    /// annotation for 2019-09, 2020-12 and a schema without `$schema`, as JSON Schema
    /// 2020-12 §7.2.1 makes it by default. Default `false`.
    pub format_asserted: bool,
    /// The only values allowed.
    pub enum_values: Option<Vec<String>>,
}

/// Constraints of a `number` or `integer` node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NumberSpec {
    /// Inclusive lower bound.
    pub minimum: Option<serde_json::Number>,
    /// Inclusive upper bound.
    pub maximum: Option<serde_json::Number>,
    /// Exclusive lower bound.
    pub exclusive_minimum: Option<serde_json::Number>,
    /// Exclusive upper bound.
    pub exclusive_maximum: Option<serde_json::Number>,
    /// The value must be a multiple of this (JSON Schema `multipleOf`).
    pub multiple_of: Option<serde_json::Number>,
    /// The only values allowed.
    pub enum_values: Option<Vec<serde_json::Number>>,
}

/// Constraints of an `array` node.
#[derive(Clone, Debug, PartialEq)]
pub struct ArraySpec {
    /// The schema of every element.
    pub items: Box<Node>,
    /// Fewest elements allowed.
    pub min_items: Option<u64>,
    /// Most elements allowed.
    pub max_items: Option<u64>,
    /// Elements must be pairwise distinct (JSON Schema `uniqueItems`).
    pub unique_items: bool,
    /// Elements that must be present (JSON Schema `contains`).
    pub contains: Option<Box<Contains>>,
}

/// A tuple: fixed schemas for the first elements (JSON Schema `prefixItems`).
#[derive(Clone, Debug, PartialEq)]
pub struct TupleSpec {
    /// Schemas of the leading elements, in order. Missing trailing elements are allowed unless
    /// `min_items` says otherwise.
    pub prefix: Vec<Node>,
    /// Schema of the elements after the prefix: `None` forbids them, `Some(any)` allows all.
    pub rest: Option<Box<Node>>,
    /// Fewest elements allowed.
    pub min_items: Option<u64>,
    /// Most elements allowed.
    pub max_items: Option<u64>,
    /// Elements must be pairwise distinct (JSON Schema `uniqueItems`).
    pub unique_items: bool,
    /// Elements that must be present (JSON Schema `contains`).
    pub contains: Option<Box<Contains>>,
}

/// Constraints of an `object` node.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectSpec {
    /// Declared properties, in declaration order. A property is required when its node says so.
    pub properties: IndexMap<String, Node>,
    /// What to do with keys not in `properties`. `None` means the definition left it out,
    /// which is a definition error for an explicit object node.
    pub additional: Option<Additional>,
    /// Fewest properties allowed.
    pub min_properties: Option<u64>,
    /// Most properties allowed.
    pub max_properties: Option<u64>,
    /// Keys matching a pattern have values matching its node, and are not additional
    /// (JSON Schema 2020-12 §10.3.2.2 `patternProperties`). Patterns are ECMAScript regular
    /// expressions, unanchored.
    pub pattern_properties: Vec<(Pattern, Node)>,
    /// Every key, as a string, matches this node (JSON Schema 2020-12 §10.3.2.4
    /// `propertyNames`).
    pub property_names: Option<Box<Node>>,
    /// When the first key is present, the listed keys must be too (JSON Schema 2020-12
    /// §6.5.4 `dependentRequired`; draft-07 `dependencies` with an array).
    pub dependent_required: Vec<(String, Vec<String>)>,
    /// When the key is present, the whole object matches the node (JSON Schema 2020-12
    /// §10.2.2.4 `dependentSchemas`; draft-07 `dependencies` with a schema).
    pub dependent_schemas: Vec<(String, Node)>,
}

/// The `additionalProperties` of an object node.
#[derive(Clone, Debug, PartialEq)]
pub enum Additional {
    /// Unknown keys are allowed with any value (`true`).
    Allow,
    /// Unknown keys are an error (`false`).
    Deny,
    /// Unknown keys are allowed when their value matches this node.
    Schema(Box<Node>),
}

impl Node {
    pub(crate) fn of(kind: NodeKind) -> Node {
        Node {
            kind,
            description: None,
            default: None,
            required: false,
            extra: None,
            implied: false,
        }
    }

    /// A `string` node without constraints.
    pub fn string() -> Node {
        Node::of(NodeKind::String(StringSpec::default()))
    }

    /// A `number` node without constraints.
    pub fn number() -> Node {
        Node::of(NodeKind::Number(NumberSpec::default()))
    }

    /// An `integer` node without constraints.
    pub fn integer() -> Node {
        Node::of(NodeKind::Integer(NumberSpec::default()))
    }

    /// A `boolean` node.
    pub fn boolean() -> Node {
        Node::of(NodeKind::Boolean)
    }

    /// A `null` node.
    pub fn null() -> Node {
        Node::of(NodeKind::Null)
    }

    /// An `any` node: every JSON value.
    pub fn any() -> Node {
        Node::of(NodeKind::Any)
    }

    /// A `literal` node: exactly `value`.
    pub fn literal(value: impl Into<Value>) -> Node {
        Node::of(NodeKind::Literal(value.into()))
    }

    /// An `array` node whose elements match `items`.
    pub fn array(items: Node) -> Node {
        Node::of(NodeKind::Array(ArraySpec {
            items: Box::new(items),
            min_items: None,
            max_items: None,
            unique_items: false,
            contains: None,
        }))
    }

    /// A tuple node: element `i` matches `prefix[i]`; further elements are refused.
    pub fn tuple(prefix: impl IntoIterator<Item = Node>) -> Node {
        Node::of(NodeKind::Tuple(TupleSpec {
            prefix: prefix.into_iter().collect(),
            rest: None,
            min_items: None,
            max_items: None,
            unique_items: false,
            contains: None,
        }))
    }

    /// An `object` node with these properties. Declare `additionalProperties` with
    /// [`Node::additional_properties`] or [`Node::additional_schema`]: leaving it out is a
    /// definition error.
    pub fn object<K: Into<String>>(properties: impl IntoIterator<Item = (K, Node)>) -> Node {
        Node::of(NodeKind::Object(ObjectSpec {
            properties: properties.into_iter().map(|(k, v)| (k.into(), v)).collect(),
            additional: None,
            min_properties: None,
            max_properties: None,
            pattern_properties: Vec::new(),
            property_names: None,
            dependent_required: Vec::new(),
            dependent_schemas: Vec::new(),
        }))
    }

    /// An exact-one `union`: a value is valid when exactly one branch accepts it.
    pub fn union(branches: impl IntoIterator<Item = Node>) -> Node {
        Node::of(NodeKind::Union(branches.into_iter().collect()))
    }

    /// An at-least-one union (JSON Schema `anyOf`).
    pub fn any_of(branches: impl IntoIterator<Item = Node>) -> Node {
        Node::of(NodeKind::AnyOf(branches.into_iter().collect()))
    }

    /// Every part must accept the value (JSON Schema `allOf`).
    pub fn all_of(parts: impl IntoIterator<Item = Node>) -> Node {
        Node::of(NodeKind::AllOf(parts.into_iter().collect()))
    }

    /// A node no value matches (JSON Schema `false`).
    pub fn never() -> Node {
        Node::of(NodeKind::Never)
    }

    /// A reference to the definition `name` of the enclosing schema.
    pub fn reference(name: impl Into<String>) -> Node {
        Node::of(NodeKind::Ref(name.into()))
    }

    /// Sets the description the model reads.
    pub fn describe(mut self, text: impl Into<String>) -> Node {
        self.description = Some(text.into());
        self
    }

    /// Sets the `default` annotation. It is shown to the model and exported; it is not
    /// filled into arguments (as in JSON Schema, `default` is an annotation).
    pub fn default_value(mut self, value: impl Into<Value>) -> Node {
        self.default = Some(value.into());
        self
    }

    /// Marks this node, as an object property, required.
    pub fn required(mut self) -> Node {
        self.required = true;
        self
    }

    /// Keeps an annotation keyword (e.g. `title`, `examples`) for display and export.
    pub fn annotate(mut self, keyword: impl Into<String>, value: impl Into<Value>) -> Node {
        self.extra
            .get_or_insert_with(Default::default)
            .insert(keyword.into(), value.into());
        self
    }

    /// String: fewest code points.
    pub fn min_length(mut self, n: u64) -> Node {
        if let NodeKind::String(s) = &mut self.kind {
            s.min_length = Some(n);
        }
        self
    }

    /// String: most code points.
    pub fn max_length(mut self, n: u64) -> Node {
        if let NodeKind::String(s) = &mut self.kind {
            s.max_length = Some(n);
        }
        self
    }

    /// String: an ECMAScript regular expression to match (unanchored).
    pub fn pattern(mut self, source: impl Into<String>) -> Node {
        if let NodeKind::String(s) = &mut self.kind {
            s.pattern = Some(Pattern::new(source));
        }
        self
    }

    /// String: a `format` name, asserted (see [`StringSpec::format_asserted`]).
    pub fn format(mut self, name: impl Into<String>) -> Node {
        if let NodeKind::String(s) = &mut self.kind {
            s.format = Some(name.into());
            s.format_asserted = true;
        }
        self
    }

    /// String: the allowed values.
    pub fn string_enum<S: Into<String>>(mut self, values: impl IntoIterator<Item = S>) -> Node {
        if let NodeKind::String(s) = &mut self.kind {
            s.enum_values = Some(values.into_iter().map(Into::into).collect());
        }
        self
    }

    fn number_spec(&mut self) -> Option<&mut NumberSpec> {
        match &mut self.kind {
            NodeKind::Number(n) | NodeKind::Integer(n) => Some(n),
            _ => None,
        }
    }

    /// Number/integer: inclusive lower bound.
    pub fn minimum(mut self, n: impl Into<serde_json::Number>) -> Node {
        if let Some(spec) = self.number_spec() {
            spec.minimum = Some(n.into());
        }
        self
    }

    /// Number/integer: inclusive upper bound.
    pub fn maximum(mut self, n: impl Into<serde_json::Number>) -> Node {
        if let Some(spec) = self.number_spec() {
            spec.maximum = Some(n.into());
        }
        self
    }

    /// Number/integer: exclusive lower bound.
    pub fn exclusive_minimum(mut self, n: impl Into<serde_json::Number>) -> Node {
        if let Some(spec) = self.number_spec() {
            spec.exclusive_minimum = Some(n.into());
        }
        self
    }

    /// Number/integer: exclusive upper bound.
    pub fn exclusive_maximum(mut self, n: impl Into<serde_json::Number>) -> Node {
        if let Some(spec) = self.number_spec() {
            spec.exclusive_maximum = Some(n.into());
        }
        self
    }

    /// Number/integer: the value must be a multiple of `n` (greater than 0).
    pub fn multiple_of(mut self, n: impl Into<serde_json::Number>) -> Node {
        if let Some(spec) = self.number_spec() {
            spec.multiple_of = Some(n.into());
        }
        self
    }

    /// Array or tuple: elements must be pairwise distinct.
    pub fn unique_items(mut self) -> Node {
        match &mut self.kind {
            NodeKind::Array(a) => a.unique_items = true,
            NodeKind::Tuple(t) => t.unique_items = true,
            _ => {}
        }
        self
    }

    /// Array or tuple: fewest elements.
    pub fn min_items(mut self, n: u64) -> Node {
        match &mut self.kind {
            NodeKind::Array(a) => a.min_items = Some(n),
            NodeKind::Tuple(t) => t.min_items = Some(n),
            _ => {}
        }
        self
    }

    /// Array or tuple: most elements.
    pub fn max_items(mut self, n: u64) -> Node {
        match &mut self.kind {
            NodeKind::Array(a) => a.max_items = Some(n),
            NodeKind::Tuple(t) => t.max_items = Some(n),
            _ => {}
        }
        self
    }

    /// Object: `additionalProperties: true` (open) or `false` (closed).
    pub fn additional_properties(mut self, allowed: bool) -> Node {
        if let NodeKind::Object(o) = &mut self.kind {
            o.additional = Some(if allowed {
                Additional::Allow
            } else {
                Additional::Deny
            });
        }
        self
    }

    /// Object: unknown keys are allowed when their value matches `node`.
    pub fn additional_schema(mut self, node: Node) -> Node {
        if let NodeKind::Object(o) = &mut self.kind {
            o.additional = Some(Additional::Schema(Box::new(node)));
        }
        self
    }

    /// What this node accepts.
    pub fn kind(&self) -> &NodeKind {
        &self.kind
    }

    /// The description, if any.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The `default` annotation, if any.
    pub fn default(&self) -> Option<&Value> {
        self.default.as_ref()
    }

    /// Whether this node, as an object property, is required.
    pub fn is_required(&self) -> bool {
        self.required
    }

    /// Annotation and unknown keywords kept for display and export.
    pub fn extra(&self) -> Option<&Map<String, Value>> {
        self.extra.as_deref()
    }

    /// A short name of the node's type for messages: `string`, `object`, `union`, …
    pub fn type_name(&self) -> &'static str {
        match &self.kind {
            NodeKind::String(_) => "string",
            NodeKind::Number(_) => "number",
            NodeKind::Integer(_) => "integer",
            NodeKind::Boolean => "boolean",
            NodeKind::Null => "null",
            NodeKind::Any => "any",
            NodeKind::Literal(_) => "literal",
            NodeKind::Array(_) => "array",
            NodeKind::Tuple(_) => "tuple",
            NodeKind::Object(_) => "object",
            NodeKind::Union(_) => "union",
            NodeKind::AnyOf(_) => "anyOf",
            NodeKind::AllOf(_) => "allOf",
            NodeKind::Never => "never",
            NodeKind::Ref(_) => "ref",
            NodeKind::Not(_) => "not",
            NodeKind::Conditional(_) => "conditional",
        }
    }
}
