//! Helpers for the JSON values that cross the boundary (DESIGN §2): JSON paths for messages,
//! type names, and exact number handling.
//!
//! Values are `serde_json::Value` built with the `arbitrary_precision` feature (numbers keep
//! their exact decimal text, so integers beyond 2^53 and beyond `u64` survive) and
//! `preserve_order` (object keys keep their order).

use std::fmt::{self, Write as _};

use serde_json::{Number, Value};

/// The deepest nesting of arrays and objects a value may have when it crosses the boundary
/// (JS → Rust, Rust → JS, tool output snapshots): 128 levels, the same limit `serde_json`
/// applies when it parses text, so every value that crosses can also be parsed back.
pub const MAX_DEPTH: usize = 128;

/// One step of a JSON path, built on the stack while a value is walked; formatted only
/// when a message needs it (`args.items[2].name`).
#[derive(Clone, Copy)]
pub(crate) enum PathSeg<'a> {
    /// The root, named by what it is (`args`, `output`, `result`).
    Root(&'a str),
    /// An object member.
    Key(&'a PathSeg<'a>, &'a str),
    /// An array element.
    Index(&'a PathSeg<'a>, usize),
}

impl<'a> PathSeg<'a> {
    /// The path of member `key` below this one.
    pub(crate) fn key(&'a self, key: &'a str) -> PathSeg<'a> {
        PathSeg::Key(self, key)
    }

    /// The path of element `index` below this one.
    pub(crate) fn index(&'a self, index: usize) -> PathSeg<'a> {
        PathSeg::Index(self, index)
    }
}

impl fmt::Display for PathSeg<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathSeg::Root(name) => f.write_str(name),
            PathSeg::Key(parent, key) => {
                parent.fmt(f)?;
                write_key(f, key)
            }
            PathSeg::Index(parent, index) => {
                parent.fmt(f)?;
                write!(f, "[{index}]")
            }
        }
    }
}

/// Appends `.key` when `key` is an identifier, else `["key"]` with JSON escapes.
pub(crate) fn write_key(out: &mut impl fmt::Write, key: &str) -> fmt::Result {
    if is_identifier(key) {
        out.write_char('.')?;
        out.write_str(key)
    } else {
        out.write_char('[')?;
        out.write_str(&Value::String(key.to_owned()).to_string())?;
        out.write_char(']')
    }
}

/// Whether `name` is an ASCII JavaScript identifier (`[A-Za-z_$][A-Za-z0-9_$]*`).
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// The JSON type name of a value, as messages say it: `string`, `number`, `boolean`, `null`,
/// `array`, `object`.
pub fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A number read exactly enough for comparisons.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Num {
    /// An integer that fits `i128` (written without fraction or exponent, or with a zero
    /// fraction).
    Int(i128),
    /// Everything else, as the nearest `f64` (`±inf` for magnitudes beyond `f64`).
    Float(f64),
}

impl Num {
    /// Reads a JSON number.
    pub(crate) fn of(n: &Number) -> Num {
        let text = n.as_str();
        if let Ok(i) = text.parse::<i128>() {
            return Num::Int(i);
        }
        let f = text.parse::<f64>().unwrap_or(f64::NAN);
        if f.fract() == 0.0 && f.abs() < 1.0e38 {
            // 1.0, 2e3: integral values written as floats compare as integers.
            return Num::Int(f as i128);
        }
        Num::Float(f)
    }

    /// Whether the mathematical value is an integer.
    pub(crate) fn is_integer(n: &Number) -> bool {
        let text = n.as_str();
        if !text.contains(['.', 'e', 'E']) {
            return true;
        }
        let f = text.parse::<f64>().unwrap_or(f64::NAN);
        f.is_finite() && f.fract() == 0.0
    }

    fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    /// Compares two numbers; exact for integers that fit `i128`.
    pub(crate) fn cmp(self, other: Num) -> Option<std::cmp::Ordering> {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => Some(a.cmp(&b)),
            (a, b) => a.as_f64().partial_cmp(&b.as_f64()),
        }
    }

    /// Whether `self` is a multiple of `divisor` (exact for integers, within 1e-9 relative
    /// error for fractions).
    pub(crate) fn is_multiple_of(self, divisor: Num) -> bool {
        match (self, divisor) {
            (_, Num::Int(0)) => false,
            (Num::Int(a), Num::Int(b)) => a % b == 0,
            (a, b) => {
                let q = a.as_f64() / b.as_f64();
                q.is_finite() && (q - q.round()).abs() <= 1e-9 * q.abs().max(1.0)
            }
        }
    }
}

/// Two JSON values are equal as JSON Schema compares them: numbers by mathematical value
/// (`1` equals `1.0`), objects regardless of key order.
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x.as_str() == y.as_str()
                || Num::of(x).cmp(Num::of(y)) == Some(std::cmp::Ordering::Equal)
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// Renders a value for a message, shortened to about `max` characters.
pub(crate) fn preview(value: &Value, max: usize) -> String {
    let text = value.to_string();
    if text.chars().count() <= max {
        return text;
    }
    let mut out: String = text.chars().take(max).collect();
    out.push('…');
    out
}

/// Formats a list of names as `a, b, c`, or `a, b, … (N more)` past `max`.
pub(crate) fn name_list<'a>(names: impl IntoIterator<Item = &'a str>, max: usize) -> String {
    let mut out = String::new();
    let mut extra = 0usize;
    for (i, name) in names.into_iter().enumerate() {
        if i >= max {
            extra += 1;
            continue;
        }
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(name);
    }
    if extra > 0 {
        let _ = write!(out, ", … ({extra} more)");
    }
    out
}

/// The length in bytes of `value` written as compact JSON, computed without writing it
/// (string escapes counted as written by `serde_json`).
pub(crate) fn json_size(value: &Value) -> usize {
    let mut total = 0usize;
    let mut stack: Vec<&Value> = vec![value];
    while let Some(v) = stack.pop() {
        total += match v {
            Value::Null => 4,
            Value::Bool(b) => {
                if *b {
                    4
                } else {
                    5
                }
            }
            Value::Number(n) => n.as_str().len(),
            Value::String(s) => string_size(s),
            Value::Array(a) => {
                stack.extend(a.iter());
                2 + a.len().saturating_sub(1)
            }
            Value::Object(o) => {
                stack.extend(o.values());
                2 + o.len().saturating_sub(1) + o.keys().map(|k| string_size(k) + 1).sum::<usize>()
            }
        };
    }
    total
}

fn string_size(s: &str) -> usize {
    2 + s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_quote_keys_that_are_not_identifiers() {
        let root = PathSeg::Root("args");
        let items = root.key("items");
        let second = items.index(2);
        let odd = second.key("foo-bar");
        assert_eq!(odd.to_string(), r#"args.items[2]["foo-bar"]"#);
    }

    #[test]
    fn numbers_compare_exactly_beyond_f64() {
        let a: Number = serde_json::from_str("9007199254740993").unwrap();
        let b: Number = serde_json::from_str("9007199254740992").unwrap();
        assert_eq!(
            Num::of(&a).cmp(Num::of(&b)),
            Some(std::cmp::Ordering::Greater)
        );
        let one: Number = serde_json::from_str("1.0").unwrap();
        assert!(Num::is_integer(&one));
        assert!(json_equal(&serde_json::json!(1), &Value::Number(one)));
    }
}
