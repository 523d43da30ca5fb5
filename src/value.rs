//! Helpers for the JSON values that cross the boundary: JSON paths for messages,
//! type names, and exact number handling.
//!
//! Values are `serde_json::Value` built with the `arbitrary_precision` feature (numbers keep
//! their exact decimal text, so integers beyond 2^53 and beyond `u64` survive) and
//! `preserve_order` (object keys keep their order).

use std::fmt::{self, Write as _};

use codemode_codegen::is_identifier;
use serde_json::{Number, Value};

/// The deepest nesting of arrays and objects a value may have when it crosses the boundary
/// (JS → Rust, Rust → JS, tool output snapshots): 127 levels, the most `serde_json` parses
/// from text (its recursion limit refuses the 128th), so every value that crosses can also
/// be parsed back.
pub const MAX_DEPTH: usize = 127;

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

/// The JSON type name of a value, as messages say it: `string`, `number`, `boolean`, `null`,
/// `array`, `object`.
pub(crate) fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A JSON number read exactly: `mantissa × 10^exponent` when the decimal text fits an
/// `i128` mantissa (38 digits), else the nearest `f64`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Num {
    /// An exact decimal.
    Decimal {
        /// The digits, with the sign.
        mantissa: i128,
        /// The power of ten.
        exponent: i32,
    },
    /// A number too long for an exact decimal.
    Float(f64),
}

impl Num {
    /// Reads a JSON number from its text (`arbitrary_precision` keeps the text).
    pub(crate) fn of(n: &Number) -> Num {
        Self::parse(n.as_str())
            .unwrap_or_else(|| Num::Float(n.as_str().parse().unwrap_or(f64::NAN)))
    }

    fn parse(text: &str) -> Option<Num> {
        let bytes = text.as_bytes();
        // Fast path: a plain integer of up to 18 digits.
        let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
        if !digits.is_empty() && digits.len() <= 18 && digits.iter().all(u8::is_ascii_digit) {
            let mut m: i64 = 0;
            for d in digits {
                m = m * 10 + i64::from(d - b'0');
            }
            let m = if bytes[0] == b'-' { -m } else { m };
            return Some(Num::Decimal {
                mantissa: i128::from(m),
                exponent: 0,
            });
        }
        let mut mantissa: i128 = 0;
        let mut exponent: i32 = 0;
        let mut negative = false;
        let mut i = 0;
        if bytes.first() == Some(&b'-') {
            negative = true;
            i = 1;
        }
        let mut in_fraction = false;
        while i < bytes.len() {
            match bytes[i] {
                d @ b'0'..=b'9' => {
                    mantissa = mantissa
                        .checked_mul(10)?
                        .checked_add(i128::from(d - b'0'))?;
                    if in_fraction {
                        exponent -= 1;
                    }
                }
                b'.' => in_fraction = true,
                b'e' | b'E' => {
                    let e: i32 = text.get(i + 1..)?.parse().ok()?;
                    exponent = exponent.checked_add(e)?;
                    break;
                }
                _ => return None,
            }
            i += 1;
        }
        if mantissa == 0 {
            exponent = 0;
        }
        Some(Num::Decimal {
            mantissa: if negative { -mantissa } else { mantissa },
            exponent,
        })
    }

    /// Whether the mathematical value is an integer (`1.0` and `2e3` are).
    pub(crate) fn is_integer(n: &Number) -> bool {
        match Num::of(n) {
            Num::Decimal { mantissa, exponent } => {
                exponent >= 0
                    || 10i128
                        .checked_pow(exponent.unsigned_abs())
                        .is_some_and(|p| mantissa % p == 0)
            }
            Num::Float(f) => f.is_finite() && f.fract() == 0.0,
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            Num::Decimal { mantissa, exponent } => {
                format!("{mantissa}e{exponent}").parse().unwrap_or(f64::NAN)
            }
            Num::Float(f) => f,
        }
    }

    /// Both as mantissas scaled to a common exponent, when that fits `i128`.
    fn aligned(self, other: Num) -> Option<(i128, i128)> {
        let (
            Num::Decimal {
                mantissa: a,
                exponent: ea,
            },
            Num::Decimal {
                mantissa: b,
                exponent: eb,
            },
        ) = (self, other)
        else {
            return None;
        };
        let e = ea.min(eb);
        let scale = |m: i128, by: i32| -> Option<i128> {
            m.checked_mul(10i128.checked_pow(u32::try_from(by).ok()?)?)
        };
        Some((scale(a, ea - e)?, scale(b, eb - e)?))
    }

    /// Compares two numbers; exact for decimals of up to 38 digits.
    pub(crate) fn cmp(self, other: Num) -> Option<std::cmp::Ordering> {
        if let (
            Num::Decimal {
                mantissa: a,
                exponent: ea,
            },
            Num::Decimal {
                mantissa: b,
                exponent: eb,
            },
        ) = (self, other)
        {
            if ea == eb {
                return Some(a.cmp(&b));
            }
            // Different signs or zero compare without scaling.
            if a.signum() != b.signum() {
                return Some(a.signum().cmp(&b.signum()));
            }
            if let Some((x, y)) = self.aligned(other) {
                return Some(x.cmp(&y));
            }
            // Same sign, too far apart to scale: the magnitude decides.
            let digits = |m: i128, e: i32| {
                (m.unsigned_abs().checked_ilog10().unwrap_or(0) as i64) + i64::from(e)
            };
            let (da, db) = (digits(a, ea), digits(b, eb));
            if da != db {
                let mag = da.cmp(&db);
                return Some(if a < 0 { mag.reverse() } else { mag });
            }
        }
        self.as_f64().partial_cmp(&other.as_f64())
    }

    /// Whether `self` is an integer multiple of `divisor`; exact for decimals.
    pub(crate) fn is_multiple_of(self, divisor: Num) -> bool {
        if let Some((a, b)) = self.aligned(divisor) {
            return b != 0 && a % b == 0;
        }
        let q = self.as_f64() / divisor.as_f64();
        q.is_finite() && q.fract() == 0.0
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

/// The FxHash function (as rustc uses): fast for short keys, for maps whose keys the
/// host controls or that live for one conversion (not a defence against crafted keys).
#[derive(Default)]
pub(crate) struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

pub(crate) type FxBuild = std::hash::BuildHasherDefault<FxHasher>;

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

    fn num(s: &str) -> Num {
        Num::of(&serde_json::from_str(s).unwrap())
    }

    #[test]
    fn decimals_compare_and_divide_exactly() {
        use std::cmp::Ordering::*;
        assert_eq!(num("0.1").cmp(num("0.10000000000000001")), Some(Less));
        assert_eq!(num("1e2").cmp(num("100")), Some(Equal));
        assert_eq!(num("-5").cmp(num("3")), Some(Less));
        assert_eq!(num("1e400").cmp(num("1e399")), Some(Greater));
        assert_eq!(num("-1e400").cmp(num("-1e399")), Some(Less));
        assert!(num("0.3").is_multiple_of(num("0.1")));
        assert!(!num("1.0000000001").is_multiple_of(num("1")));
        assert!(num("18446744073709551616").is_multiple_of(num("2")));
        assert!(Num::is_integer(&serde_json::from_str("2e3").unwrap()));
        assert!(!Num::is_integer(&serde_json::from_str("2.5").unwrap()));
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
