//! Validation of JSON values against nodes.
//!
//! The walk allocates nothing while values are valid: paths are built on the stack
//! ([`PathSeg`]) and formatted only when a violation is recorded.

use std::fmt;

use indexmap::IndexMap;
use serde_json::Value;

use super::format::check_format;
use super::node::{Additional, Contains, Node, NodeKind, ObjectSpec};
use crate::value::{Num, PathSeg, json_equal, json_type_name, preview};

/// Most violations one report lists; the rest are counted in [`ValidationReport::omitted`].
pub const MAX_VIOLATIONS: usize = 20;

/// Deepest nesting of nodes the validator follows before it reports the value as too deep.
const MAX_NODE_DEPTH: usize = 256;

/// One reason a value does not match its schema, at a JSON path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Where, e.g. `args.items[2].name`.
    pub path: String,
    /// What is wrong and what was expected, e.g. `expected string, got number`.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Every violation found in one value (up to [`MAX_VIOLATIONS`]).
///
/// Displays as one violation per line, e.g.
/// `args.items[2].name: expected string, got number`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationReport {
    /// The violations, in the order the walk met them.
    pub violations: Vec<Violation>,
    /// How many more violations were found but not listed.
    pub omitted: usize,
}

impl fmt::Display for ValidationReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, v) in self.violations.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            v.fmt(f)?;
        }
        if self.omitted > 0 {
            write!(f, "\n… and {} more", self.omitted)?;
        }
        Ok(())
    }
}

impl std::error::Error for ValidationReport {}

pub(crate) struct Validator<'s> {
    defs: &'s IndexMap<String, Node>,
    violations: Vec<Violation>,
    omitted: usize,
    /// When set, the walk stops at the first violation and records nothing (used to count
    /// the branches of a union that accept a value).
    quiet: bool,
}

impl<'s> Validator<'s> {
    pub(crate) fn new(defs: &'s IndexMap<String, Node>) -> Self {
        Validator {
            defs,
            violations: Vec::new(),
            omitted: 0,
            quiet: false,
        }
    }

    pub(crate) fn finish(self) -> Result<(), ValidationReport> {
        if self.violations.is_empty() && self.omitted == 0 {
            Ok(())
        } else {
            Err(ValidationReport {
                violations: self.violations,
                omitted: self.omitted,
            })
        }
    }

    fn report(&mut self, path: &PathSeg<'_>, message: impl FnOnce() -> String) {
        if self.quiet {
            return;
        }
        if self.violations.len() < MAX_VIOLATIONS {
            self.violations.push(Violation {
                path: path.to_string(),
                message: message(),
            });
        } else {
            self.omitted += 1;
        }
    }

    fn accepts(&self, node: &Node, value: &Value, depth: usize) -> bool {
        let mut probe = Validator {
            defs: self.defs,
            violations: Vec::new(),
            omitted: 0,
            quiet: true,
        };
        probe.check(node, value, &PathSeg::Root(""), depth)
    }

    /// Checks `value` against `node`; returns whether it matched.
    pub(crate) fn check(
        &mut self,
        node: &Node,
        value: &Value,
        path: &PathSeg<'_>,
        depth: usize,
    ) -> bool {
        if depth > MAX_NODE_DEPTH {
            self.report(path, || {
                format!("value nests deeper than {MAX_NODE_DEPTH} schema levels")
            });
            return false;
        }
        if node.implied && !same_type(node, value) {
            return true;
        }
        match &node.kind {
            NodeKind::Any => true,
            NodeKind::Null => self.expect_type(value.is_null(), "null", value, path),
            NodeKind::Boolean => self.expect_type(value.is_boolean(), "boolean", value, path),
            NodeKind::String(spec) => {
                let Value::String(s) = value else {
                    return self.expect_type(false, "string", value, path);
                };
                let mut ok = true;
                if spec.min_length.is_some() || spec.max_length.is_some() {
                    let count = s.chars().count() as u64;
                    if let Some(min) = spec.min_length
                        && count < min
                    {
                        ok = false;
                        self.report(path, || {
                            format!("expected at least {min} characters, got {count}")
                        });
                    }
                    if let Some(max) = spec.max_length
                        && count > max
                    {
                        ok = false;
                        self.report(path, || {
                            format!("expected at most {max} characters, got {count}")
                        });
                    }
                }
                if let Some(pattern) = &spec.pattern {
                    match pattern.check(s) {
                        Ok(true) => {}
                        Ok(false) => {
                            ok = false;
                            self.report(path, || {
                                format!("does not match the pattern /{}/", pattern.source())
                            });
                        }
                        Err(super::pattern::Unchecked::TooLong) => {
                            ok = false;
                            self.report(path, || {
                                format!(
                                    "is too long to check against the pattern /{}/, which needs backtracking (at most {} characters)",
                                    pattern.source(),
                                    super::pattern::MAX_BACKTRACKING_INPUT
                                )
                            });
                        }
                        Err(super::pattern::Unchecked::TooCostly) => {
                            ok = false;
                            self.report(path, || {
                                format!(
                                    "could not be checked against the pattern /{}/: matching it needs more than {} backtracking steps",
                                    pattern.source(),
                                    super::pattern::MAX_BACKTRACK_STEPS
                                )
                            });
                        }
                    }
                }
                if let Some(format) = &spec.format
                    && spec.format_asserted
                    && let Err(why) = check_format(format, s)
                {
                    ok = false;
                    self.report(path, || format!("not a valid {format}: {why}"));
                }
                if let Some(values) = &spec.enum_values
                    && !values.iter().any(|v| v == s)
                {
                    ok = false;
                    self.report(path, || {
                        let list: Vec<String> = values
                            .iter()
                            .map(|v| Value::String(v.clone()).to_string())
                            .collect();
                        format!(
                            "expected one of {}, got {}",
                            list.join(", "),
                            preview(value, 60)
                        )
                    });
                }
                ok
            }
            NodeKind::Number(spec) | NodeKind::Integer(spec) => {
                let Value::Number(n) = value else {
                    return self.expect_type(false, node.type_name(), value, path);
                };
                let integer = matches!(node.kind, NodeKind::Integer(_));
                if integer && !Num::is_integer(n) {
                    self.report(path, || format!("expected integer, got {n}"));
                    return false;
                }
                let x = Num::of(n);
                let mut ok = true;
                let mut bound = |limit: &Option<serde_json::Number>,
                                 fails: fn(std::cmp::Ordering) -> bool,
                                 word: &str| {
                    if let Some(limit) = limit {
                        let lim = Num::of(limit);
                        if x.cmp(lim).is_none_or(fails) {
                            ok = false;
                            self.report(path, || {
                                format!("expected a number {word} {limit}, got {n}")
                            });
                        }
                    }
                };
                bound(&spec.minimum, |o| o.is_lt(), ">=");
                bound(&spec.maximum, |o| o.is_gt(), "<=");
                bound(&spec.exclusive_minimum, |o| o.is_le(), ">");
                bound(&spec.exclusive_maximum, |o| o.is_ge(), "<");
                if let Some(m) = &spec.multiple_of
                    && !x.is_multiple_of(Num::of(m))
                {
                    ok = false;
                    self.report(path, || format!("expected a multiple of {m}, got {n}"));
                }
                if let Some(values) = &spec.enum_values
                    && !values
                        .iter()
                        .any(|v| Num::of(v).cmp(x) == Some(std::cmp::Ordering::Equal))
                {
                    ok = false;
                    self.report(path, || {
                        let list: Vec<String> = values.iter().map(|v| v.to_string()).collect();
                        format!("expected one of {}, got {n}", list.join(", "))
                    });
                }
                ok
            }
            NodeKind::Literal(expected) => {
                if json_equal(expected, value) {
                    true
                } else {
                    self.report(path, || {
                        format!(
                            "expected {}, got {}",
                            preview(expected, 60),
                            preview(value, 60)
                        )
                    });
                    false
                }
            }
            NodeKind::Array(spec) => {
                let Value::Array(items) = value else {
                    return self.expect_type(false, "array", value, path);
                };
                let mut ok = self.check_count(items.len(), spec.min_items, spec.max_items, path);
                for (i, item) in items.iter().enumerate() {
                    if !self.check(&spec.items, item, &path.index(i), depth + 1) {
                        ok = false;
                        if self.quiet {
                            return false;
                        }
                    }
                }
                if spec.unique_items {
                    ok &= self.check_unique(items, path);
                }
                if let Some(c) = &spec.contains {
                    ok &= self.check_contains(c, items, path, depth);
                }
                ok
            }
            NodeKind::Tuple(spec) => {
                let Value::Array(items) = value else {
                    return self.expect_type(false, "array", value, path);
                };
                let mut ok = self.check_count(items.len(), spec.min_items, spec.max_items, path);
                for (i, item) in items.iter().enumerate() {
                    let element = match (spec.prefix.get(i), &spec.rest) {
                        (Some(n), _) => n,
                        (None, Some(rest)) => rest,
                        (None, None) => {
                            let len = spec.prefix.len();
                            self.report(&path.index(i), || {
                                format!("the tuple has {len} elements; this one is extra")
                            });
                            ok = false;
                            break;
                        }
                    };
                    if !self.check(element, item, &path.index(i), depth + 1) {
                        ok = false;
                        if self.quiet {
                            return false;
                        }
                    }
                }
                if spec.unique_items {
                    ok &= self.check_unique(items, path);
                }
                if let Some(c) = &spec.contains {
                    ok &= self.check_contains(c, items, path, depth);
                }
                ok
            }
            NodeKind::Object(spec) => {
                let Value::Object(map) = value else {
                    return self.expect_type(false, "object", value, path);
                };
                self.check_object(spec, map, path, depth)
            }
            NodeKind::Not(inner) => {
                if self.accepts(inner, value, depth + 1) {
                    self.report(path, || {
                        format!(
                            "matches a schema it must not match (`not`: {})",
                            preview(&inner.to_json_schema(), 80)
                        )
                    });
                    false
                } else {
                    true
                }
            }
            NodeKind::Conditional(c) => {
                let branch = if self.accepts(&c.condition, value, depth + 1) {
                    c.then.as_ref()
                } else {
                    c.otherwise.as_ref()
                };
                match branch {
                    Some(n) => self.check(n, value, path, depth + 1),
                    None => true,
                }
            }
            NodeKind::Union(branches) => self.check_union(branches, value, path, depth),
            NodeKind::AnyOf(branches) => {
                if branches.iter().any(|b| self.accepts(b, value, depth + 1)) {
                    return true;
                }
                self.report_closest(branches, value, path, depth, "none of");
                false
            }
            NodeKind::AllOf(parts) => {
                let mut ok = true;
                for part in parts {
                    if !self.check(part, value, path, depth + 1) {
                        ok = false;
                        if self.quiet {
                            return false;
                        }
                    }
                }
                ok
            }
            NodeKind::Never => {
                self.report(path, || "no value is allowed here".to_owned());
                false
            }
            NodeKind::Ref(name) => match self.defs.get(name) {
                Some(target) => self.check(target, value, path, depth + 1),
                None => {
                    self.report(path, || {
                        format!("schema refers to an unknown definition `{name}`")
                    });
                    false
                }
            },
        }
    }

    fn expect_type(&mut self, ok: bool, expected: &str, value: &Value, path: &PathSeg<'_>) -> bool {
        if !ok {
            self.report(path, || {
                format!("expected {expected}, got {}", json_type_name(value))
            });
        }
        ok
    }

    fn check_count(
        &mut self,
        len: usize,
        min: Option<u64>,
        max: Option<u64>,
        path: &PathSeg<'_>,
    ) -> bool {
        let len = len as u64;
        let mut ok = true;
        if let Some(min) = min
            && len < min
        {
            ok = false;
            self.report(path, || format!("expected at least {min} items, got {len}"));
        }
        if let Some(max) = max
            && len > max
        {
            ok = false;
            self.report(path, || format!("expected at most {max} items, got {len}"));
        }
        ok
    }

    fn check_count_props(&mut self, len: usize, spec: &ObjectSpec, path: &PathSeg<'_>) -> bool {
        let len = len as u64;
        let mut ok = true;
        if let Some(min) = spec.min_properties
            && len < min
        {
            ok = false;
            self.report(path, || {
                format!("expected at least {min} properties, got {len}")
            });
        }
        if let Some(max) = spec.max_properties
            && len > max
        {
            ok = false;
            self.report(path, || {
                format!("expected at most {max} properties, got {len}")
            });
        }
        ok
    }

    /// Elements must be pairwise distinct (JSON Schema 2020-12 §6.4.3 `uniqueItems`).
    fn check_unique(&mut self, items: &[Value], path: &PathSeg<'_>) -> bool {
        let mut ok = true;
        for i in 1..items.len() {
            if let Some(j) = (0..i).find(|&j| json_equal(&items[i], &items[j])) {
                ok = false;
                if self.quiet {
                    return false;
                }
                self.report(&path.index(i), || {
                    format!("duplicates element {j}, but elements must be unique")
                });
            }
        }
        ok
    }

    /// Counts the elements matching `contains` and checks the count against its bounds
    /// (JSON Schema 2020-12 §10.3.1.3, §6.4.4, §6.4.5).
    fn check_contains(
        &mut self,
        c: &Contains,
        items: &[Value],
        path: &PathSeg<'_>,
        depth: usize,
    ) -> bool {
        let count = items
            .iter()
            .filter(|item| self.accepts(&c.node, item, depth + 1))
            .count() as u64;
        let shown = || preview(&c.node.to_json_schema(), 80);
        if count < c.min {
            let min = c.min;
            self.report(path, || {
                format!(
                    "expected at least {min} element(s) matching `contains` {}, got {count}",
                    shown()
                )
            });
            return false;
        }
        if let Some(max) = c.max
            && count > max
        {
            self.report(path, || {
                format!(
                    "expected at most {max} element(s) matching `contains` {}, got {count}",
                    shown()
                )
            });
            return false;
        }
        true
    }

    /// Checks an object in one pass over its entries: declared properties (found in
    /// declaration order first, so the usual case needs no hashing), keys matching
    /// `patternProperties`, other keys against `additional` (`None` = open, as at the root
    /// of parameters), `propertyNames`; then missing required properties, the property
    /// count, `dependentRequired` and `dependentSchemas` (JSON Schema 2020-12 §10.3.2,
    /// §6.5, §10.2.2.4).
    pub(crate) fn check_object(
        &mut self,
        spec: &ObjectSpec,
        map: &serde_json::Map<String, Value>,
        path: &PathSeg<'_>,
        depth: usize,
    ) -> bool {
        let properties = &spec.properties;
        let mut ok = true;
        let mut required_seen = 0usize;
        let mut cursor = 0usize;
        for (key, v) in map {
            let declared = match properties.get_index(cursor) {
                Some((k, node)) if k == key => {
                    cursor += 1;
                    Some(node)
                }
                _ => properties.get_full(key.as_str()).map(|(i, _, node)| {
                    cursor = i + 1;
                    node
                }),
            };
            let mut member_ok = true;
            if let Some(names) = &spec.property_names
                && !self.accepts(names, &Value::String(key.clone()), depth + 1)
            {
                member_ok = false;
                self.report(&path.key(key), || {
                    format!(
                        "the key does not match `propertyNames` {}",
                        preview(&names.to_json_schema(), 80)
                    )
                });
            }
            let mut matched_pattern = false;
            for (pattern, node) in &spec.pattern_properties {
                match pattern.check(key) {
                    Ok(false) => {}
                    Ok(true) => {
                        matched_pattern = true;
                        member_ok &= self.check(node, v, &path.key(key), depth + 1);
                    }
                    Err(_) => {
                        member_ok = false;
                        self.report(&path.key(key), || {
                            format!(
                                "the key could not be checked against the pattern /{}/ of patternProperties (too costly)",
                                pattern.source()
                            )
                        });
                    }
                }
            }
            member_ok &= match declared {
                Some(node) => {
                    if node.required {
                        required_seen += 1;
                    }
                    self.check(node, v, &path.key(key), depth + 1)
                }
                None if matched_pattern => true,
                None => match spec.additional.as_ref() {
                    None | Some(Additional::Allow) => true,
                    Some(Additional::Schema(node)) => {
                        self.check(node, v, &path.key(key), depth + 1)
                    }
                    Some(Additional::Deny) => {
                        self.report(&path.key(key), || {
                            let known: Vec<&str> = properties.keys().map(String::as_str).collect();
                            let patterns: Vec<&str> = spec
                                .pattern_properties
                                .iter()
                                .map(|(p, _)| p.source())
                                .collect();
                            let mut m = if known.is_empty() && patterns.is_empty() {
                                "unknown property (this object takes no properties)".to_owned()
                            } else if known.is_empty() {
                                "unknown property".to_owned()
                            } else {
                                format!(
                                    "unknown property (allowed: {})",
                                    crate::value::name_list(known, 12)
                                )
                            };
                            if !patterns.is_empty() {
                                let list: Vec<String> =
                                    patterns.iter().map(|p| format!("/{p}/")).collect();
                                m.push_str(&format!(
                                    "; keys matching {} are allowed too",
                                    list.join(", ")
                                ));
                            }
                            m
                        });
                        false
                    }
                },
            };
            if !member_ok {
                ok = false;
                if self.quiet {
                    return false;
                }
            }
        }
        let required_total = properties.values().filter(|p| p.required).count();
        if required_seen < required_total {
            ok = false;
            if self.quiet {
                return false;
            }
            for (key, prop) in properties {
                if prop.required && !map.contains_key(key) {
                    self.report(&path.key(key), || {
                        format!("missing required property (expected {})", short_type(prop))
                    });
                }
            }
        }
        if !self.check_count_props(map.len(), spec, path) {
            ok = false;
            if self.quiet {
                return false;
            }
        }
        for (key, needed) in &spec.dependent_required {
            if !map.contains_key(key) {
                continue;
            }
            for other in needed {
                if !map.contains_key(other) {
                    ok = false;
                    if self.quiet {
                        return false;
                    }
                    self.report(&path.key(other), || {
                        format!("missing property, required when {key:?} is present")
                    });
                }
            }
        }
        let mut whole: Option<Value> = None;
        for (key, node) in &spec.dependent_schemas {
            if !map.contains_key(key) {
                continue;
            }
            let whole = whole.get_or_insert_with(|| Value::Object(map.clone()));
            if !self.check(node, whole, path, depth + 1) {
                ok = false;
                if self.quiet {
                    return false;
                }
            }
        }
        ok
    }

    fn check_union(
        &mut self,
        branches: &[Node],
        value: &Value,
        path: &PathSeg<'_>,
        depth: usize,
    ) -> bool {
        let mut matched: Vec<usize> = Vec::new();
        for (i, b) in branches.iter().enumerate() {
            if self.accepts(b, value, depth + 1) {
                matched.push(i);
                if self.quiet && matched.len() > 1 {
                    return false;
                }
            }
        }
        match matched.len() {
            1 => true,
            0 => {
                self.report_closest(branches, value, path, depth, "none of");
                false
            }
            _ => {
                self.report(path, || {
                    let names: Vec<String> = matched
                        .iter()
                        .map(|&i| branch_name(i, &branches[i]))
                        .collect();
                    format!(
                        "matches {} branches ({}) but exactly one must match",
                        matched.len(),
                        names.join(", ")
                    )
                });
                false
            }
        }
    }

    /// Reports that no branch matched, naming the branches, followed by the violations of
    /// the closest one (the branch of the value's type with the fewest violations).
    fn report_closest(
        &mut self,
        branches: &[Node],
        value: &Value,
        path: &PathSeg<'_>,
        depth: usize,
        what: &str,
    ) {
        if self.quiet {
            return;
        }
        let mut best: Option<(usize, Vec<Violation>, usize)> = None;
        for (i, b) in branches.iter().enumerate() {
            let mut probe = Validator::new(self.defs);
            probe.check(b, value, path, depth + 1);
            let type_miss = probe.violations.first().is_some_and(|v| {
                v.message.starts_with("expected ") && v.message.contains(", got ")
            }) && probe.violations.len() == 1
                && probe.violations[0].path == path.to_string();
            let score = probe.violations.len() + probe.omitted + if type_miss { 1000 } else { 0 };
            if best.as_ref().is_none_or(|(_, _, s)| score < *s) {
                best = Some((i, probe.violations, score));
            }
        }
        let names: Vec<String> = branches
            .iter()
            .enumerate()
            .map(|(i, b)| branch_name(i, b))
            .collect();
        let got = json_type_name(value);
        match best {
            Some((i, violations, score)) if score < 1000 => {
                self.report(path, || {
                    format!(
                        "matches {what} the {} branches ({}); closest is {}:",
                        branches.len(),
                        names.join(", "),
                        branch_name(i, &branches[i])
                    )
                });
                for v in violations {
                    if self.violations.len() < MAX_VIOLATIONS {
                        self.violations.push(v);
                    } else {
                        self.omitted += 1;
                    }
                }
            }
            _ => self.report(path, || {
                format!(
                    "matches {what} the {} branches ({}), got {got}",
                    branches.len(),
                    names.join(", ")
                )
            }),
        }
    }
}

/// `#1 string`, `#2 object "point"` — how messages name a union branch.
fn branch_name(index: usize, node: &Node) -> String {
    let mut out = format!("#{} {}", index + 1, short_type(node));
    if let Some(d) = node.description() {
        let d: String = d.chars().take(40).collect();
        out.push_str(&format!(" \"{d}\""));
    }
    out
}

fn short_type(node: &Node) -> String {
    match &node.kind {
        NodeKind::Literal(v) => preview(v, 30),
        NodeKind::Ref(name) => name.clone(),
        NodeKind::String(s) if s.enum_values.is_some() => "string enum".to_owned(),
        _ => node.type_name().to_owned(),
    }
}

/// Whether `value` is of the JSON type `node` describes (a node of no single type says yes).
fn same_type(node: &Node, value: &Value) -> bool {
    match &node.kind {
        NodeKind::String(_) => value.is_string(),
        NodeKind::Number(_) | NodeKind::Integer(_) => value.is_number(),
        NodeKind::Boolean => value.is_boolean(),
        NodeKind::Null => value.is_null(),
        NodeKind::Array(_) | NodeKind::Tuple(_) => value.is_array(),
        NodeKind::Object(_) => value.is_object(),
        _ => true,
    }
}
