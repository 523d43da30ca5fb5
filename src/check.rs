//! A static check of a program against the tools it calls (`codemode check`): no Node, no
//! engine, only the program module's swc parse and the tools' schemas.
//!
//! What it reports, each with the line and column in the program's own text (fences
//! included):
//! - syntax errors, and constructs that cannot run (an `enum`, an `import`), as `run_code`
//!   would report them;
//! - calls `tools.<name>(…)` / `tools["name"](…)` of a name that is not a tool the program
//!   sees, with the closest name;
//! - object-literal arguments that miss a required key, carry a key the object does not
//!   take (where it is closed: a tool's arguments object is always open at its root, as
//!   its parameter schema is), or give a literal value the schema refuses (wrong type,
//!   not in the enum, out of range, …).
//!
//! It is deliberately conservative: a key that is computed, an object with a spread, a
//! value that is not a literal, or a program that declares its own `tools` is not
//! guessed at. Runtime validation stays authoritative.

use std::fmt;

use serde_json::{Map, Value};
use swc_ecma_ast::{
    ArrayLit, BindingIdent, CallExpr, Callee, Expr, Lit, MemberProp, ObjectLit, Prop, PropName,
    PropOrSpread, UnaryOp,
};
use swc_ecma_visit::{Visit, VisitWith};

use crate::dispatch::Registry;
use crate::dispatch::registry::{closest_name, unknown_tool_in_program};
use crate::program::{LineIndex, parse_for_check, prepare_here};
use crate::schema::validate::Validator;
use crate::schema::{Additional, Node, NodeKind, ObjectSpec, ParameterSchema};
use crate::value::PathSeg;

/// What a diagnostic is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DiagnosticKind {
    /// The program does not parse, or uses a construct that cannot run.
    Syntax,
    /// A call of a name that is not a tool.
    UnknownTool,
    /// An arguments object without a required key.
    MissingKey,
    /// A key a closed object does not take.
    UnknownKey,
    /// A literal value the schema refuses.
    WrongValue,
}

/// One finding of [`check_program`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// 1-based line in the program's text.
    pub line: u32,
    /// 1-based column (in characters).
    pub column: u32,
    /// What it is about.
    pub kind: DiagnosticKind,
    /// What is wrong, for a person or a model.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

/// Checks `source` (a `run_code` program) against the tools a program in `registry` sees.
/// Returns the diagnostics in source order; empty when nothing was found.
pub fn check_program(source: &str, registry: &Registry) -> Vec<Diagnostic> {
    crate::program::with_parse_stack(source.len(), || check_here(source, registry))
        .unwrap_or_else(syntax)
}

/// The one diagnostic of a program that cannot be parsed.
fn syntax(e: crate::program::SourceError) -> Vec<Diagnostic> {
    vec![Diagnostic {
        line: e.line.unwrap_or(1),
        column: e.column.unwrap_or(1),
        kind: DiagnosticKind::Syntax,
        message: format!("{}: {}", e.kind.name(), e.message),
    }]
}

fn check_here(source: &str, registry: &Registry) -> Vec<Diagnostic> {
    if let Err(e) = prepare_here(source) {
        return syntax(e);
    }
    let (module, body, line_offset) = match parse_for_check(source) {
        Ok(parsed) => parsed,
        Err(e) => return syntax(e),
    };
    let mut shadow = Shadow(false);
    module.visit_with(&mut shadow);
    if shadow.0 {
        return Vec::new();
    }
    let tools = registry.sandbox_tools();
    let names: Vec<String> = tools.iter().map(|t| t.name().to_owned()).collect();
    let mut checker = Checker {
        registry,
        names,
        body,
        lines: LineIndex::new(body),
        line_offset,
        out: Vec::new(),
    };
    module.visit_with(&mut checker);
    checker.out.sort_by_key(|d| (d.line, d.column));
    checker.out
}

/// Whether the program binds its own `tools` (then calls on it are not the sandbox's).
struct Shadow(bool);

impl Visit for Shadow {
    fn visit_binding_ident(&mut self, b: &BindingIdent) {
        if &*b.id.sym == "tools" {
            self.0 = true;
        }
    }
}

struct Checker<'a> {
    registry: &'a Registry,
    names: Vec<String>,
    body: &'a str,
    lines: LineIndex,
    line_offset: u32,
    out: Vec<Diagnostic>,
}

impl Checker<'_> {
    /// The tool `name` (a name or an alias) calls, if the program sees it.
    fn tool(&self, name: &str) -> Option<crate::Tool> {
        self.registry
            .get(name)
            .filter(|t| self.names.iter().any(|n| n == t.name()))
    }

    /// Whether the program sees a tool `name` (a name or an alias).
    fn visible(&self, name: &str) -> bool {
        self.tool(name).is_some()
    }
}

impl Visit for Checker<'_> {
    fn visit_call_expr(&mut self, call: &CallExpr) {
        call.visit_children_with(self);
        let Callee::Expr(callee) = &call.callee else {
            return;
        };
        let Some(name) = tool_name(callee) else {
            // `tools.fs.read(…)` reads `tools.fs` first: for a tool named `fs.read`, that
            // is an unknown tool when the program runs.
            if let Expr::Member(method) = unwrap(callee)
                && let Some(name) = tool_name(&method.obj)
                && !self.visible(&name)
            {
                let message = unknown_tool_in_program(&name, &self.names);
                self.report(
                    callee_prop_lo(&method.obj),
                    DiagnosticKind::UnknownTool,
                    message,
                );
            }
            return;
        };
        let Some(tool) = self.tool(&name) else {
            let message = unknown_tool_in_program(&name, &self.names);
            self.report(callee_prop_lo(callee), DiagnosticKind::UnknownTool, message);
            return;
        };
        let params = tool.parameters();
        let path = format!("tools.{}", crate::dispatch::tool_alias(tool.name()));
        match call.args.first() {
            None => {
                let missing = required_keys(&params.root_spec().properties);
                if !missing.is_empty() {
                    self.report(
                        call_end(call),
                        DiagnosticKind::MissingKey,
                        format!(
                            "{path} needs an arguments object with {}",
                            key_list(&missing)
                        ),
                    );
                }
            }
            Some(arg) if arg.spread.is_none() => {
                self.check_root(&arg.expr, params);
            }
            Some(_) => {}
        }
    }
}

impl Checker<'_> {
    fn report(&mut self, lo: u32, kind: DiagnosticKind, message: String) {
        let offset = lo.saturating_sub(1) as usize;
        let (line, column) = self.lines.line_col(self.body, offset);
        self.out.push(Diagnostic {
            line: line + 1 + self.line_offset,
            column: column + 1,
            kind,
            message,
        });
    }

    /// The arguments of a call: an object literal is checked key by key against the
    /// root; a literal of another type is an error; anything else is not guessed.
    fn check_root(&mut self, expr: &Expr, params: &ParameterSchema) {
        let expr = unwrap(expr);
        if let Expr::Object(obj) = expr {
            self.check_object(obj, params.root_spec(), params, &PathSeg::Root("args"));
            return;
        }
        if let Some(value) = literal(expr)
            && let Err(report) = params.validate(&value)
            && !report.violations.is_empty()
        {
            self.report(
                lo(expr),
                DiagnosticKind::WrongValue,
                first_reason(&report, params),
            );
        }
    }

    fn check_object(
        &mut self,
        obj: &ObjectLit,
        spec: &ObjectSpec,
        params: &ParameterSchema,
        path: &PathSeg<'_>,
    ) {
        let mut complete = true;
        let mut seen: Vec<String> = Vec::new();
        let mut props = Vec::with_capacity(obj.props.len());
        for prop in &obj.props {
            let PropOrSpread::Prop(prop) = prop else {
                complete = false;
                continue;
            };
            // `__proto__: value` sets the object's prototype and makes no key.
            if let Prop::KeyValue(kv) = &**prop
                && !matches!(kv.key, PropName::Computed(_))
                && prop_name(&kv.key).as_deref() == Some("__proto__")
            {
                continue;
            }
            let (key, key_lo, value) = match &**prop {
                Prop::KeyValue(kv) => match prop_name(&kv.key) {
                    Some(k) => (k, kv.key_lo(), Some(&*kv.value)),
                    None => {
                        complete = false;
                        continue;
                    }
                },
                Prop::Shorthand(id) => (id.sym.to_string(), id.span.lo.0, None),
                Prop::Method(m) => match prop_name(&m.key) {
                    Some(k) => (k, m.key_lo(), None),
                    None => {
                        complete = false;
                        continue;
                    }
                },
                _ => {
                    complete = false;
                    continue;
                }
            };
            props.push((key, key_lo, value));
        }
        for (i, (key, key_lo, value)) in props.iter().enumerate() {
            let (key, key_lo, value) = (key.clone(), *key_lo, *value);
            // A key written again later: only the last value counts.
            if props[i + 1..].iter().any(|(k, _, _)| *k == key) {
                continue;
            }
            let here = PathSeg::Key(path, &key);
            match spec.properties.get(&key) {
                Some(node) => {
                    if let Some(value) = value {
                        self.check_value(value, node, params, &here);
                    }
                }
                None if spec
                    .pattern_properties
                    .iter()
                    .any(|(p, _)| p.is_match(&key)) =>
                {
                    // Keys matching `patternProperties` are not additional (JSON Schema
                    // 2020-12 §10.3.2.3); the validator checks their values.
                }
                None => match &spec.additional {
                    Some(Additional::Deny) => {
                        let takes: Vec<&str> = spec.properties.keys().map(String::as_str).collect();
                        let mut message = format!("{path}: unknown key {key:?}");
                        match closest_name(&key, &takes) {
                            Some(close) => message.push_str(&format!("; did you mean {close:?}?")),
                            None => message.push('.'),
                        }
                        message.push_str(&format!(" The object takes {}.", key_list(&takes)));
                        self.report(key_lo, DiagnosticKind::UnknownKey, message);
                    }
                    Some(Additional::Schema(node)) => {
                        if let Some(value) = value {
                            self.check_value(value, node, params, &here);
                        }
                    }
                    _ => {}
                },
            }
            seen.push(key);
        }
        if complete {
            let missing: Vec<&str> = required_keys(&spec.properties)
                .into_iter()
                .filter(|k| !seen.iter().any(|s| s == k))
                .collect();
            if !missing.is_empty() {
                self.report(
                    obj.span.lo.0,
                    DiagnosticKind::MissingKey,
                    format!("{path}: missing required {}", key_list(&missing)),
                );
            }
        }
    }

    fn check_value(
        &mut self,
        expr: &Expr,
        node: &Node,
        params: &ParameterSchema,
        path: &PathSeg<'_>,
    ) {
        let expr = unwrap(expr);
        let node = resolve(node, params);
        if let (Expr::Object(obj), NodeKind::Object(spec)) = (expr, &node.kind) {
            self.check_object(obj, spec, params, path);
            return;
        }
        if let Some(value) = literal(expr) {
            let mut v = Validator::new(params.defs());
            v.check(node, &value, path, 1);
            if let Err(report) = v.finish()
                && !report.violations.is_empty()
            {
                self.report(
                    lo(expr),
                    DiagnosticKind::WrongValue,
                    first_reason(&report, params),
                );
            }
        }
    }
}

/// The first reason of `report`, followed by the expected shape of its property when there
/// is one (as a run's argument errors show it); a reason that introduces others (`…:`, as a
/// union's closest branch does) is followed by the first of them.
fn first_reason(
    report: &crate::schema::validate::ValidationReport,
    params: &ParameterSchema,
) -> String {
    let schema = params.to_json_schema();
    let mut text = String::new();
    for v in &report.violations {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(&v.to_string());
        if !v.message.ends_with(':') {
            if let Some(hint) = crate::schema::hint::property_hint(&schema, &v.path) {
                text.push_str(" — ");
                text.push_str(&hint);
            }
            break;
        }
    }
    text
}

/// `tools.x` / `tools["x"]` / `tools?.x` → `x`.
fn tool_name(callee: &Expr) -> Option<String> {
    let member = match unwrap(callee) {
        Expr::Member(m) => m,
        Expr::OptChain(o) => o.base.as_member()?,
        _ => return None,
    };
    match unwrap(&member.obj) {
        Expr::Ident(i) if &*i.sym == "tools" => {}
        _ => return None,
    }
    let name = match &member.prop {
        MemberProp::Ident(i) => Some(i.sym.to_string()),
        MemberProp::Computed(c) => match unwrap(&c.expr) {
            Expr::Lit(Lit::Str(s)) => Some(s.value.to_string_lossy().into_owned()),
            Expr::Tpl(t) if t.exprs.is_empty() => t
                .quasis
                .first()
                .and_then(|q| q.cooked.as_ref())
                .map(|c| c.to_string_lossy().into_owned()),
            _ => None,
        },
        MemberProp::PrivateName(_) => None,
    }?;
    // The discovery functions are no tools (see `crate::discovery`).
    (name != crate::discovery::SEARCH && name != crate::discovery::DESCRIBE).then_some(name)
}

/// Where the tool's name starts in the callee (for the unknown-tool diagnostic).
fn callee_prop_lo(callee: &Expr) -> u32 {
    let member = match unwrap(callee) {
        Expr::Member(m) => Some(m),
        Expr::OptChain(o) => o.base.as_member(),
        _ => None,
    };
    match member.map(|m| &m.prop) {
        Some(MemberProp::Ident(i)) => i.span.lo.0,
        Some(MemberProp::Computed(c)) => c.span.lo.0,
        _ => lo(callee),
    }
}

fn call_end(call: &CallExpr) -> u32 {
    call.span.hi.0.saturating_sub(1)
}

fn lo(expr: &Expr) -> u32 {
    use swc_common::Spanned;
    expr.span().lo.0
}

/// Through parentheses and TypeScript's `!`, `as const` and `satisfies` (which do not change
/// the value).
fn unwrap(expr: &Expr) -> &Expr {
    match expr {
        Expr::Paren(p) => unwrap(&p.expr),
        Expr::TsNonNull(n) => unwrap(&n.expr),
        Expr::TsConstAssertion(c) => unwrap(&c.expr),
        Expr::TsSatisfies(s) => unwrap(&s.expr),
        other => other,
    }
}

fn prop_name(key: &PropName) -> Option<String> {
    match key {
        PropName::Ident(i) => Some(i.sym.to_string()),
        PropName::Str(s) => Some(s.value.to_string_lossy().into_owned()),
        PropName::Num(n) => Some(number_key(n.value)),
        PropName::Computed(c) => match unwrap(&c.expr) {
            Expr::Lit(Lit::Str(s)) => Some(s.value.to_string_lossy().into_owned()),
            _ => None,
        },
        PropName::BigInt(_) => None,
    }
}

/// The property key JavaScript makes of a number key (`1` → `"1"`, `1.5` → `"1.5"`).
fn number_key(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e21 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

trait KeyLo {
    fn key_lo(&self) -> u32;
}

impl KeyLo for swc_ecma_ast::KeyValueProp {
    fn key_lo(&self) -> u32 {
        use swc_common::Spanned;
        self.key.span().lo.0
    }
}

impl KeyLo for swc_ecma_ast::MethodProp {
    fn key_lo(&self) -> u32 {
        use swc_common::Spanned;
        self.key.span().lo.0
    }
}

/// The JSON value of a literal expression: strings, numbers (with a unary minus),
/// booleans, `null`, templates without substitutions, and arrays and objects of those.
/// `None` for anything else (a variable, a call, `undefined`).
fn literal(expr: &Expr) -> Option<Value> {
    match unwrap(expr) {
        Expr::Lit(Lit::Str(s)) => Some(Value::String(s.value.to_string_lossy().into_owned())),
        Expr::Lit(Lit::Num(n)) => number(n.value),
        Expr::Lit(Lit::Bool(b)) => Some(Value::Bool(b.value)),
        Expr::Lit(Lit::Null(_)) => Some(Value::Null),
        Expr::Unary(u) if u.op == UnaryOp::Minus => match unwrap(&u.arg) {
            Expr::Lit(Lit::Num(n)) => number(-n.value),
            _ => None,
        },
        Expr::Tpl(t) if t.exprs.is_empty() => t
            .quasis
            .first()
            .and_then(|q| q.cooked.as_ref())
            .map(|c| Value::String(c.to_string_lossy().into_owned())),
        Expr::Array(a) => array_literal(a),
        Expr::Object(o) => {
            let mut map = Map::new();
            for p in &o.props {
                let PropOrSpread::Prop(p) = p else {
                    return None;
                };
                let Prop::KeyValue(kv) = &**p else {
                    return None;
                };
                let key = prop_name(&kv.key)?;
                // `__proto__: value` sets the prototype and makes no key.
                if key == "__proto__" && !matches!(kv.key, PropName::Computed(_)) {
                    continue;
                }
                map.insert(key, literal(&kv.value)?);
            }
            Some(Value::Object(map))
        }
        _ => None,
    }
}

fn array_literal(a: &ArrayLit) -> Option<Value> {
    let mut items = Vec::with_capacity(a.elems.len());
    for e in &a.elems {
        let e = e.as_ref()?;
        if e.spread.is_some() {
            return None;
        }
        items.push(literal(&e.expr)?);
    }
    Some(Value::Array(items))
}

fn number(n: f64) -> Option<Value> {
    if n.fract() == 0.0 && n.abs() <= 9_007_199_254_740_991.0 {
        Some(Value::from(n as i64))
    } else {
        serde_json::Number::from_f64(n).map(Value::Number)
    }
}

/// A node through `$ref`s (to at most a few levels, for cycles of bare references).
fn resolve<'n>(mut node: &'n Node, params: &'n ParameterSchema) -> &'n Node {
    for _ in 0..8 {
        match &node.kind {
            NodeKind::Ref(name) => match params.defs().get(name) {
                Some(target) => node = target,
                None => return node,
            },
            _ => return node,
        }
    }
    node
}

fn required_keys(props: &indexmap::IndexMap<String, Node>) -> Vec<&str> {
    props
        .iter()
        .filter(|(_, n)| n.required)
        .map(|(k, _)| k.as_str())
        .collect()
}

fn key_list(keys: &[&str]) -> String {
    let quoted: Vec<String> = keys.iter().map(|k| format!("{k:?}")).collect();
    match quoted.len() {
        0 => "no keys".to_owned(),
        1 => format!("key {}", quoted[0]),
        _ => format!("keys {}", quoted.join(", ")),
    }
}

/// A program as a TypeScript file for the real compiler; see [`typescript_program`].
#[derive(Clone, Debug)]
pub struct TypescriptProgram(crate::program::CheckedBody);

impl TypescriptProgram {
    /// The file's text: the program as the body of an async function opening on its first
    /// line, so lines stay the program's.
    pub fn text(&self) -> &str {
        &self.0.text
    }

    /// The position in the program's source (1-based line and character column, fences
    /// counted) of a 1-based (line, column) the compiler reports in [`Self::text`].
    pub fn original_position(&self, line: u32, column: u32) -> (u32, u32) {
        self.0.original_position(line, column)
    }
}

/// The variable an `export default` value is assigned to, declared by [`TS_WRAPPER`].
const TS_DEFAULT: &str = "__codemode_default";

/// The text the wrapper puts before a program.
const TS_WRAPPER: &str = "async function __codemode_program() { let __codemode_default: unknown; ";

/// `source` (a `run_code` program) as a TypeScript file to check beside the tools'
/// declarations and [`SANDBOX_GLOBALS`](crate::SANDBOX_GLOBALS), with what maps the
/// compiler's positions back to `source`. The program becomes a function's body, so its
/// exports become statements: `export default x` is checked as an assignment of `x`.
pub fn typescript_program(source: &str) -> TypescriptProgram {
    TypescriptProgram(crate::program::body_for_check(
        source, TS_WRAPPER, TS_DEFAULT, "\n}\n",
    ))
}
