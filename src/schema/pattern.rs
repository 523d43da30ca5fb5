//! The `pattern` keyword: ECMAScript regular expressions (JSON Schema says `pattern` is
//! ECMA-262), matched in time linear in the string.
//!
//! A pattern is first compiled with `regress`, an ECMAScript regex engine, with the `u`
//! flag: that decides what is a valid pattern and what it means. Matching a backtracking
//! engine against strings a model chose would let one crafted string (`"aaaa…b"` against
//! `^(a+)+$`) hang validation for hours, so a pattern whose constructs are all regular is
//! translated, construct by construct, into the `regex` crate's syntax with ECMAScript's
//! meanings (`\d` is `[0-9]`, `\w` is ASCII, `.` stops at line terminators, `\b` is an ASCII
//! word boundary) and matched by `regex`, which runs in linear time.
//!
//! Patterns that need backtracking (backreferences, lookaround) are translated the same way
//! and matched by `fancy-regex`, which hands their regular parts to `regex` and bounds the
//! backtracking of the rest at [`MAX_BACKTRACK_STEPS`] steps, so no string can make a
//! match run for long (`^(?!x)(a|a)*$`, `(?=.)a*a*a*b` included). Three guards: a pattern
//! that also nests quantifiers (`(a+)+`) is refused at registration, strings longer than
//! [`MAX_BACKTRACKING_INPUT`] characters are reported as too long to check, and a match that
//! passes the step bound is reported as too costly to check, rather than checked.

use std::fmt;
use std::sync::Arc;

/// Longest string (in characters) checked against a pattern that needs backtracking.
pub const MAX_BACKTRACKING_INPUT: usize = 10_000;

/// Most backtracking steps one match of a backtracking pattern may take (a few
/// milliseconds); past it the string is reported as too costly to check.
pub const MAX_BACKTRACK_STEPS: usize = 1_000_000;

/// An ECMAScript regular expression, compiled when the node is built.
///
/// Building never fails: a source that does not compile is kept, and reported as a
/// definition error when the schema is checked ([`Pattern::error`]).
#[derive(Clone)]
pub struct Pattern {
    source: String,
    compiled: Result<Matcher, String>,
}

#[derive(Clone)]
enum Matcher {
    /// Translated to the `regex` crate: linear time.
    Linear(Arc<regex::Regex>),
    /// Needs backtracking (backreferences, lookaround): `fancy-regex`, bounded.
    Backtracking(Arc<fancy_regex::Regex>),
}

/// Why a pattern could not be checked against a string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unchecked {
    /// Longer than [`MAX_BACKTRACKING_INPUT`] characters.
    TooLong,
    /// The match passed [`MAX_BACKTRACK_STEPS`].
    TooCostly,
}

impl Pattern {
    /// Compiles `source`. Never fails: see [`Pattern::error`].
    pub fn new(source: impl Into<String>) -> Self {
        let source = source.into();
        let compiled = compile(&source);
        Pattern { source, compiled }
    }

    /// The pattern as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Why the pattern cannot be used, if it cannot.
    pub fn error(&self) -> Option<&str> {
        self.compiled.as_ref().err().map(String::as_str)
    }

    /// Whether `text` contains a match. A pattern that did not compile matches nothing.
    pub fn is_match(&self, text: &str) -> bool {
        self.check(text).unwrap_or(false)
    }

    /// Whether `text` contains a match, or why a backtracking pattern could not tell: a
    /// string over [`MAX_BACKTRACKING_INPUT`] characters, or a match past
    /// [`MAX_BACKTRACK_STEPS`].
    pub(crate) fn check(&self, text: &str) -> Result<bool, Unchecked> {
        match &self.compiled {
            Ok(Matcher::Linear(re)) => Ok(re.is_match(text)),
            Ok(Matcher::Backtracking(re)) => {
                if text.len() > MAX_BACKTRACKING_INPUT
                    && text.chars().count() > MAX_BACKTRACKING_INPUT
                {
                    return Err(Unchecked::TooLong);
                }
                re.is_match(text).map_err(|_| Unchecked::TooCostly)
            }
            Err(_) => Ok(false),
        }
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Pattern").field(&self.source).finish()
    }
}

fn compile(source: &str) -> Result<Matcher, String> {
    // regress decides what is a valid ECMAScript pattern.
    regress::Regex::with_flags(source, "u").map_err(|e| e.to_string())?;
    if let Some(translated) = translate(source, false)
        && let Ok(re) = regex::RegexBuilder::new(&translated)
            .size_limit(1 << 24)
            .build()
    {
        return Ok(Matcher::Linear(Arc::new(re)));
    }
    if nests_quantifiers(source) {
        return Err(
            "the pattern needs backtracking (a backreference or lookaround) and nests quantifiers, so a crafted string could make it run for hours; remove the nesting (e.g. `(a+)+` → `a+`)"
                .to_owned(),
        );
    }
    let unsupported = |why: String| {
        format!(
            "the pattern needs backtracking (a backreference or lookaround) in a form this engine cannot check safely: {why}"
        )
    };
    let translated = translate(source, true)
        .ok_or_else(|| unsupported("a construct that is not translated".to_owned()))?;
    let re = fancy_regex::RegexBuilder::new(&translated)
        .backtrack_limit(MAX_BACKTRACK_STEPS)
        .delegate_size_limit(1 << 24)
        .build()
        .map_err(|e| unsupported(e.to_string()))?;
    Ok(Matcher::Backtracking(Arc::new(re)))
}

/// ECMAScript `\s`: WhiteSpace and LineTerminator.
const WHITESPACE: &str = r"\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";

/// Translates an ECMAScript pattern (already accepted by regress with the `u` flag) into the
/// `regex` crate's syntax with the same meaning; `None` when it uses a construct that is not
/// regular or not translated. With `backtracking`, backreferences (`\1`, `\k<name>`) and
/// lookaround (`(?=`, `(?!`, `(?<=`, `(?<!`) are kept as written, for `fancy-regex`.
fn translate(source: &str, backtracking: bool) -> Option<String> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len() + 16);
    let mut in_class = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '\\' => {
                let next = *chars.get(i)?;
                i += 1;
                match next {
                    'd' => out.push_str(if in_class { "0-9" } else { "[0-9]" }),
                    'D' => out.push_str("[^0-9]"),
                    'w' => out.push_str(if in_class {
                        "A-Za-z0-9_"
                    } else {
                        "[A-Za-z0-9_]"
                    }),
                    'W' => out.push_str("[^A-Za-z0-9_]"),
                    's' => {
                        if in_class {
                            out.push_str(WHITESPACE);
                        } else {
                            out.push('[');
                            out.push_str(WHITESPACE);
                            out.push(']');
                        }
                    }
                    'S' => {
                        out.push_str("[^");
                        out.push_str(WHITESPACE);
                        out.push(']');
                    }
                    'b' if in_class => out.push_str(r"\x08"),
                    'b' => out.push_str(r"(?-u:\b)"),
                    'B' => out.push_str(r"(?-u:\B)"),
                    'n' => out.push_str(r"\n"),
                    'r' => out.push_str(r"\r"),
                    't' => out.push_str(r"\t"),
                    'f' => out.push_str(r"\x0C"),
                    'v' => out.push_str(r"\x0B"),
                    '0' => out.push_str(r"\x00"),
                    'c' => {
                        let letter = *chars.get(i)?;
                        i += 1;
                        push_code_point(&mut out, u32::from(letter) % 32);
                    }
                    'x' => {
                        let hex: String = chars.get(i..i + 2)?.iter().collect();
                        i += 2;
                        push_code_point(&mut out, u32::from_str_radix(&hex, 16).ok()?);
                    }
                    'u' => {
                        let (cp, used) = unicode_escape(&chars[i..])?;
                        i += used;
                        match cp {
                            Some(cp) => push_code_point(&mut out, cp),
                            // A lone surrogate: no Rust string contains one.
                            None => out.push_str(if in_class { "" } else { r"[^\x00-\x{10FFFF}]" }),
                        }
                    }
                    'p' | 'P' => {
                        out.push('\\');
                        out.push(next);
                        if chars.get(i) != Some(&'{') {
                            return None;
                        }
                        while let Some(&ch) = chars.get(i) {
                            out.push(ch);
                            i += 1;
                            if ch == '}' {
                                break;
                            }
                        }
                    }
                    // Backreferences (\1, \k<name>) are not regular.
                    '1'..='9' | 'k' if !backtracking => return None,
                    '1'..='9' | 'k' => {
                        out.push('\\');
                        out.push(next);
                    }
                    other if other.is_ascii_punctuation() => {
                        out.push('\\');
                        out.push(other);
                    }
                    other => {
                        push_code_point(&mut out, u32::from(other));
                    }
                }
            }
            '.' if !in_class => out.push_str(r"[^\n\r\x{2028}\x{2029}]"),
            '[' if !in_class => {
                in_class = true;
                let negated = chars.get(i) == Some(&'^');
                if negated {
                    i += 1;
                }
                if chars.get(i) == Some(&']') {
                    // `[]` matches nothing; `[^]` matches anything.
                    i += 1;
                    in_class = false;
                    out.push_str(if negated {
                        r"[\x00-\x{10FFFF}]"
                    } else {
                        r"[^\x00-\x{10FFFF}]"
                    });
                    continue;
                }
                out.push('[');
                if negated {
                    out.push('^');
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            '[' | '&' | '~' if in_class => {
                out.push('\\');
                out.push(c);
            }
            '-' if in_class && chars.get(i) == Some(&'-') => return None,
            '(' if !in_class && chars.get(i) == Some(&'?') => {
                match (chars.get(i + 1), chars.get(i + 2)) {
                    (Some(':'), _) => {}
                    (Some('<'), Some(n)) if *n != '=' && *n != '!' => {}
                    // Lookahead and lookbehind are not regular.
                    _ if !backtracking => return None,
                    _ => {}
                }
                out.push('(');
            }
            other => {
                if other.is_ascii_punctuation() && matches!(other, '#' | '~' | '&') {
                    out.push('\\');
                }
                out.push(other);
            }
        }
    }
    Some(out)
}

/// Reads the part of a `\u` escape after the `u`: `XXXX`, a surrogate pair
/// `XXXX\uYYYY`, or `{…}`. Returns the code point (`None` for a lone surrogate) and the
/// characters used.
fn unicode_escape(rest: &[char]) -> Option<(Option<u32>, usize)> {
    if rest.first() == Some(&'{') {
        let end = rest.iter().position(|c| *c == '}')?;
        let hex: String = rest[1..end].iter().collect();
        let cp = u32::from_str_radix(&hex, 16).ok()?;
        return Some((
            if (0xD800..0xE000).contains(&cp) {
                None
            } else {
                Some(cp)
            },
            end + 1,
        ));
    }
    let hex: String = rest.get(0..4)?.iter().collect();
    let high = u32::from_str_radix(&hex, 16).ok()?;
    if (0xD800..0xDC00).contains(&high)
        && rest.get(4) == Some(&'\\')
        && rest.get(5) == Some(&'u')
        && let Some(low_hex) = rest.get(6..10)
        && let Ok(low) = u32::from_str_radix(&low_hex.iter().collect::<String>(), 16)
        && (0xDC00..0xE000).contains(&low)
    {
        return Some((Some(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)), 10));
    }
    if (0xD800..0xE000).contains(&high) {
        return Some((None, 4));
    }
    Some((Some(high), 4))
}

fn push_code_point(out: &mut String, cp: u32) {
    out.push_str(&format!(r"\x{{{cp:X}}}"));
}

/// Whether a quantifier applies to a group that itself contains a quantifier (`(a+)+`).
fn nests_quantifiers(source: &str) -> bool {
    let chars: Vec<char> = source.chars().collect();
    // For each open group: whether it contains a quantifier.
    let mut open: Vec<bool> = Vec::new();
    // Whether the atom just before the current position is a group with a quantifier.
    let mut quantified_group_before = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '\\' => {
                i += 1;
                quantified_group_before = false;
            }
            '[' => {
                while i < chars.len() && chars[i] != ']' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                quantified_group_before = false;
            }
            '(' => {
                open.push(false);
                if chars.get(i) == Some(&'?') {
                    // group syntax: (?: (?= (?! (?<= (?<! (?<name>
                    i += 1;
                    if chars.get(i) == Some(&'<')
                        && !matches!(chars.get(i + 1), Some('=') | Some('!'))
                    {
                        while i < chars.len() && chars[i] != '>' {
                            i += 1;
                        }
                    }
                    i += 1;
                }
                quantified_group_before = false;
            }
            ')' => {
                let had = open.pop().unwrap_or(false);
                if had && let Some(parent) = open.last_mut() {
                    *parent = true;
                }
                quantified_group_before = had;
            }
            '*' | '+' | '?' | '{' => {
                if c == '{' {
                    while i < chars.len() && chars[i] != '}' {
                        i += 1;
                    }
                    i += 1;
                }
                if chars.get(i) == Some(&'?') {
                    i += 1;
                }
                if quantified_group_before {
                    return true;
                }
                if let Some(top) = open.last_mut() {
                    *top = true;
                }
                quantified_group_before = false;
            }
            _ => quantified_group_before = false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catastrophic_patterns_finish() {
        let p = Pattern::new("^(a+)+$");
        assert!(p.error().is_none());
        let text = format!("{}b", "a".repeat(100_000));
        let started = std::time::Instant::now();
        assert!(!p.is_match(&text));
        assert!(p.is_match("aaaa"));
        assert!(
            started.elapsed() < std::time::Duration::from_secs(1),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn backtracking_patterns_are_bounded_and_keep_their_meaning() {
        // Lookaround with alternation under a star, and adjacent stars: exponential for a
        // plain backtracker (these hung validation); bounded here.
        let cases: [(&str, String, Result<bool, Unchecked>); 8] = [
            ("^(?!x)(a|a)*$", format!("{}!", "a".repeat(40)), Ok(false)),
            ("^(?!x)(a|a)*$", "aaaa".to_owned(), Ok(true)),
            ("^(?!x)a*a*a*a*a*a*b", "a".repeat(1000), Ok(false)),
            (
                "^(?=.*[A-Z])(?=.*\\d).{8,}$",
                "Abcdefg1".to_owned(),
                Ok(true),
            ),
            (
                "^(?=.*[A-Z])(?=.*\\d).{8,}$",
                "abcdefg1".to_owned(),
                Ok(false),
            ),
            ("^(\\w)\\1$", "zz".to_owned(), Ok(true)),
            ("^(?<c>\\d)-\\k<c>$", "7-7".to_owned(), Ok(true)),
            ("(?<=\\$)\\d+", "cost: $15".to_owned(), Ok(true)),
        ];
        for (pattern, text, want) in cases {
            let p = Pattern::new(pattern);
            assert_eq!(p.error(), None, "{pattern}");
            assert!(
                matches!(p.compiled, Ok(Matcher::Backtracking(_))),
                "{pattern}"
            );
            assert_eq!(p.check(&text), want, "{pattern} on {text:?}");
        }
        assert_eq!(Pattern::new("^(\\w)\\1$").check("zy"), Ok(false));
    }

    #[test]
    fn backtracking_patterns_with_nested_quantifiers_are_refused() {
        let p = Pattern::new("^(a+)+\\1$");
        assert!(
            p.error().unwrap().contains("nests quantifiers"),
            "{:?}",
            p.error()
        );
        let ok = Pattern::new("^(a)\\1$");
        assert!(ok.error().is_none());
        assert!(ok.is_match("aa"));
        assert!(!ok.is_match("ab"));
        assert_eq!(ok.check(&"a".repeat(20_000)), Err(Unchecked::TooLong));
        let look = Pattern::new("^(?=.*\\d)[a-z0-9]+$");
        assert!(look.is_match("abc1"));
        assert!(!look.is_match("abc"));
    }

    /// The translation means what regress means, on a spread of patterns and strings.
    #[test]
    fn translation_agrees_with_regress() {
        let patterns = [
            r"^\d+$",
            r"\w+",
            r"^\s*$",
            r"a.b",
            r"^[^\d\s]+$",
            r"[\w-]+@[\w.]+",
            r"\bword\b",
            r"^\u0041\u{1F600}$",
            r"[\u0041-\u005A]+",
            r"^\x41$",
            r"^[]$",
            r"^[^]$",
            r"a|b|c",
            r"^(?:ab)+$",
            r"^(?<year>\d{4})-(?<m>\d{2})$",
            r"^\p{L}+$",
            r"[a&&b]",
            r"[~]",
            r"\.",
            r"\/",
            r"^a{2,3}$",
            r"^\cA$",
            r"[\b]",
            r"\uD83D\uDE00",
            r"^.{2}$",
            r"x*?y",
            r"\S",
            r"\W",
            r"\D",
            r"^$",
            r"[.]",
            r"\t\n",
            r"#",
        ];
        let inputs = [
            "",
            "a",
            "ab",
            "a.b",
            "a\nb",
            "123",
            "12a",
            " ",
            "\u{a0}",
            "\u{2028}",
            "é",
            "Ω",
            "😀",
            "A😀",
            "AZ",
            "word",
            "words",
            "a word!",
            "x@y.z",
            "ab_c-d@e.f",
            "2024-02",
            "aa",
            "aaaa",
            "\u{1}",
            "\u{8}",
            "xy",
            "xxxy",
            "\t\n",
            "#",
            "&",
            "~",
            "/",
            ".",
            "ABC",
            "éé",
        ];
        for p in patterns {
            let ecma = regress::Regex::with_flags(p, "u").unwrap();
            let ours = Pattern::new(p);
            assert!(
                matches!(ours.compiled, Ok(Matcher::Linear(_))),
                "{p} should translate"
            );
            for s in inputs {
                assert_eq!(
                    ours.is_match(s),
                    ecma.find(s).is_some(),
                    "pattern {p:?} on {s:?}"
                );
            }
        }
    }
}
