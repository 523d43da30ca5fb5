//! The output cap: cutting the model-facing text of a run to a number of characters,
//! safely.
//!
//! Characters are Unicode scalar values (`char`s): a surrogate pair from JavaScript is one
//! character, and no cut can fall inside a UTF-8 sequence. A cut moves to the nearest
//! grapheme boundary (UAX #29: an emoji with its modifiers, a letter with its combining
//! marks) when one lies within [`GRAPHEME_REACH`] characters, and settles for a character
//! boundary otherwise.
//!
//! Three shapes are cut here:
//! - text ([`cut_text`]): head, a marker `[… N characters and M lines dropped …]`, tail;
//! - console lines ([`cut_logs`]): the first lines, a marker line, the last lines (a line
//!   longer than the room left is cut inside);
//! - JSON ([`shrink_json`]): shrunk structurally so that it stays valid JSON.
//!
//! Every function here is linear in what it keeps, not in what it drops, except for one
//! count of the characters of a string it cuts.

use serde_json::{Map, Value};
use unicode_segmentation::GraphemeCursor;

use crate::sandbox::{LogEntry, LogLevel};

/// How many characters a cut moves to reach a grapheme boundary before it settles for a
/// character boundary (a grapheme longer than this, like "Zalgo" text, is split).
pub(crate) const GRAPHEME_REACH: usize = 32;

/// The byte index ending at most `n` characters of `s`, moved back to a grapheme boundary
/// within reach.
pub(crate) fn head_end(s: &str, n: usize) -> usize {
    let Some((b, _)) = s.char_indices().nth(n) else {
        return s.len();
    };
    let mut cursor = GraphemeCursor::new(b, s.len(), true);
    if cursor.is_boundary(s, 0) == Ok(true) {
        return b;
    }
    match cursor.prev_boundary(s, 0) {
        Ok(Some(p)) if s[p..b].chars().count() <= GRAPHEME_REACH => p,
        _ => b,
    }
}

/// The byte index starting at most `n` last characters of `s`, moved forward to a grapheme
/// boundary within reach.
pub(crate) fn tail_start(s: &str, n: usize) -> usize {
    if n == 0 {
        return s.len();
    }
    let Some((b, _)) = s.char_indices().rev().nth(n - 1) else {
        return 0;
    };
    let mut cursor = GraphemeCursor::new(b, s.len(), true);
    if cursor.is_boundary(s, 0) == Ok(true) {
        return b;
    }
    match cursor.next_boundary(s, 0) {
        Ok(Some(q)) if s[b..q].chars().count() <= GRAPHEME_REACH => q,
        _ => b,
    }
}

fn newlines(s: &str) -> usize {
    s.bytes().filter(|&b| b == b'\n').count()
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The marker of a text cut: `[… 1200 characters and 3 lines dropped …]`. "Lines" counts the
/// line breaks dropped; a cut inside one line says `[… 1200 characters dropped …]`.
pub(crate) fn text_marker(chars: usize, lines: usize) -> String {
    if lines == 0 {
        // Cut inside one line: no line was dropped, so none is counted.
        return string_marker(chars);
    }
    format!(
        "[… {} and {} dropped …]",
        plural(chars, "character", "characters"),
        plural(lines, "line", "lines")
    )
}

/// The longest [`text_marker`] for counts up to `chars` and `lines` (the plural is one
/// character longer than the singular, so counts are taken as at least 2; `lines` 0 stays
/// 0: a text without line breaks never counts lines).
fn text_marker_max(chars: usize, lines: usize) -> usize {
    let lines = if lines == 0 { 0 } else { lines.max(2) };
    text_marker(chars.max(2), lines).chars().count()
}

/// The marker inside a cut JSON string: `[… 1200 characters dropped …]`.
fn string_marker(chars: usize) -> String {
    format!("[… {} dropped …]", plural(chars, "character", "characters"))
}

/// Where a text is cut: the head `..head`, the tail `tail..`.
struct Plan {
    head: usize,
    tail: usize,
}

/// Plans a cut of `s` to `budget` characters with a marker of at most `marker_max`
/// characters; `None` when `s` fits. Linear in `budget`, not in `s`.
fn plan(s: &str, budget: usize, marker_max: usize) -> Option<Plan> {
    if s.len() <= budget || s.char_indices().nth(budget).is_none() {
        return None;
    }
    let keep = budget.saturating_sub(marker_max);
    let head = head_end(s, keep.div_ceil(2));
    let head_chars = s[..head].chars().count();
    let tail = tail_start(s, keep - head_chars.min(keep)).max(head);
    Some(Plan { head, tail })
}

/// `s` cut to at most `budget` characters: head, [`text_marker`], tail; `None` when it
/// fits. When even the marker does not fit, the head alone.
pub(crate) fn cut_text(s: &str, budget: usize) -> Option<String> {
    // The marker's numbers are at most the byte length of `s` (and no line is counted in a
    // text without line breaks).
    let breaks = if s.contains('\n') { s.len() } else { 0 };
    let marker_max = text_marker_max(s.len(), breaks);
    let plan = plan(s, budget, marker_max)?;
    if budget <= marker_max {
        return Some(s[..head_end(s, budget)].to_owned());
    }
    let (head, tail) = (&s[..plan.head], &s[plan.tail..]);
    let middle = &s[plan.head..plan.tail];
    let marker = text_marker(middle.chars().count(), newlines(middle));
    let mut out = String::with_capacity(head.len() + marker.len() + tail.len());
    out.push_str(head);
    out.push_str(&marker);
    out.push_str(tail);
    Some(out)
}

/// Characters one console line takes in the rendered text: `[level] ` unless `log`, the
/// text, a line break.
pub(crate) fn prefix_chars(level: LogLevel) -> usize {
    if level == LogLevel::Log {
        0
    } else {
        level.as_str().len() + 3
    }
}

/// The console lines of a run, as kept in memory: `head`, then `dropped` lines (their
/// characters and inner line breaks) that are only in the spill, then `tail`.
pub(crate) struct LogView<'a> {
    pub(crate) head: &'a [LogEntry],
    pub(crate) tail: &'a [LogEntry],
    pub(crate) dropped_entries: usize,
    pub(crate) dropped_chars: usize,
    pub(crate) dropped_newlines: usize,
}

impl LogView<'_> {
    /// Characters of the rendered lines (the dropped ones counted without their prefix).
    pub(crate) fn rendered_chars(&self) -> usize {
        let kept: usize = self
            .head
            .iter()
            .chain(self.tail)
            .map(|e| prefix_chars(e.level) + e.text.chars().count() + 1)
            .sum();
        kept + self.dropped_chars + self.dropped_entries
    }
}

/// Fewest characters of a line shown when it is cut inside (fewer would show a fragment
/// that reads like a line of its own).
const MIN_PIECE: usize = 64;

/// The console lines cut to at most `budget` rendered characters: the first lines, a marker
/// line (level `log`) saying how many characters and lines were dropped, the last lines.
/// `None` when everything fits and nothing was dropped in memory. A line longer than the
/// room left is cut inside (its head, or its tail); one line longer than the whole budget
/// shows its head and its tail.
pub(crate) fn cut_logs(view: &LogView<'_>, budget: usize) -> Option<Vec<LogEntry>> {
    let gap = view.dropped_entries > 0;
    let entries: Vec<(&LogEntry, usize)> = view
        .head
        .iter()
        .chain(view.tail)
        .map(|e| (e, e.text.chars().count()))
        .collect();
    let total_chars: usize = entries.iter().map(|e| e.1).sum::<usize>() + view.dropped_chars;
    let total_breaks: usize = entries
        .iter()
        .map(|(e, _)| 1 + newlines(&e.text))
        .sum::<usize>()
        + view.dropped_entries
        + view.dropped_newlines;
    if !gap && view.rendered_chars() <= budget {
        return None;
    }
    let marker_max = text_marker_max(total_chars, total_breaks) + 1;
    if budget <= marker_max {
        return Some(Vec::new());
    }
    let room = budget - marker_max;
    let head_room = room.div_ceil(2);
    let n_head = view.head.len();
    // The gap sits between index n_head - 1 and n_head.
    let gap_at = if gap { Some(n_head) } else { None };

    let mut shown: Vec<LogEntry> = Vec::new();
    let (mut kept_chars, mut kept_breaks, mut used) = (0usize, 0usize, 0usize);
    // Head: whole lines, then the head of the first line that does not fit.
    let mut next = 0usize;
    let mut head_cut: Option<usize> = None;
    while next < entries.len() && gap_at != Some(next) {
        let (e, chars) = entries[next];
        let cost = prefix_chars(e.level) + chars + 1;
        if used + cost <= head_room {
            used += cost;
            kept_chars += chars;
            kept_breaks += 1 + newlines(&e.text);
            shown.push(e.clone());
            next += 1;
            continue;
        }
        let avail = head_room.saturating_sub(used + prefix_chars(e.level) + 1);
        if avail >= MIN_PIECE.min(room / 4) && avail > 0 {
            let end = head_end(&e.text, avail);
            if end > 0 {
                let piece = &e.text[..end];
                used += prefix_chars(e.level) + piece.chars().count() + 1;
                kept_chars += piece.chars().count();
                kept_breaks += newlines(piece);
                shown.push(LogEntry {
                    level: e.level,
                    text: piece.to_owned(),
                });
                head_cut = Some(end);
            }
        }
        break;
    }
    // Tail: whole lines from the end, then the tail of the first that does not fit; never
    // back past the head.
    let tail_room = room.saturating_sub(used);
    let mut tail: Vec<LogEntry> = Vec::new();
    let mut tail_used = 0usize;
    let mut i = entries.len();
    while i > next {
        let (e, chars) = entries[i - 1];
        let starts_at = if i - 1 == next {
            head_cut.unwrap_or(0)
        } else {
            0
        };
        let whole = starts_at == 0;
        let cost = prefix_chars(e.level) + chars + 1;
        if whole && tail_used + cost <= tail_room {
            tail_used += cost;
            kept_chars += chars;
            kept_breaks += 1 + newlines(&e.text);
            tail.push(e.clone());
            i -= 1;
            if gap_at == Some(i) {
                break;
            }
            continue;
        }
        let avail = tail_room.saturating_sub(tail_used + prefix_chars(e.level) + 1);
        if avail >= MIN_PIECE.min(room / 4) && avail > 0 {
            let start = tail_start(&e.text, avail).max(starts_at);
            if start < e.text.len() {
                let piece = &e.text[start..];
                kept_chars += piece.chars().count();
                kept_breaks += newlines(piece) + 1;
                tail.push(LogEntry {
                    level: e.level,
                    text: piece.to_owned(),
                });
            }
        }
        break;
    }
    shown.push(LogEntry {
        level: LogLevel::Log,
        text: text_marker(
            total_chars.saturating_sub(kept_chars),
            total_breaks.saturating_sub(kept_breaks),
        ),
    });
    shown.extend(tail.into_iter().rev());
    Some(shown)
}

/// Limits of one structural shrink.
#[derive(Clone, Copy, Debug)]
struct Shrink {
    /// Characters of a string (a longer one becomes head, marker, tail).
    string: usize,
    /// Items of an array (the rest become one `"… N more items"`).
    items: usize,
    /// Members of an object (the rest become one member `"…": "N more keys"`).
    keys: usize,
    /// Nesting shown; a deeper non-empty array or object becomes `"[… N items]"` or
    /// `"{… N keys}"`.
    depth: usize,
}

const UNLIMITED: Shrink = Shrink {
    string: usize::MAX,
    items: usize::MAX,
    keys: usize::MAX,
    depth: usize::MAX,
};

/// The smallest string limit the shrink goes down to.
const MIN_STRING: usize = 48;

/// Where the depth limit starts once strings, arrays and objects are at their smallest.
const START_DEPTH: usize = 16;

/// Counts compact-JSON characters up to a budget.
struct Meter {
    used: usize,
    budget: usize,
}

impl Meter {
    fn add(&mut self, n: usize) -> bool {
        self.used = self.used.saturating_add(n);
        self.used <= self.budget
    }
}

/// Characters of `s` as a JSON string body (serde_json's escapes), counting at most a
/// little past `max`.
fn escaped_chars(s: &str, max: usize) -> usize {
    let mut n = 0usize;
    for (i, &b) in s.as_bytes().iter().enumerate() {
        n += match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            0x80..=0xbf => 0,
            _ => 1,
        };
        if n > max && i % 64 == 0 {
            return n;
        }
    }
    n
}

/// Compact-JSON characters of `s` under `limit` (quotes included), at most a little past
/// `max`.
fn string_chars(s: &str, limit: usize, max: usize) -> usize {
    let marker_max = string_marker(s.len().max(2)).chars().count();
    match plan(s, limit, marker_max) {
        None => 2 + escaped_chars(s, max),
        Some(p) => {
            2 + marker_max + escaped_chars(&s[..p.head], max) + escaped_chars(&s[p.tail..], max)
        }
    }
}

/// `s` under `limit`: itself, or head, [`string_marker`], tail.
fn shrink_string(s: &str, limit: usize) -> String {
    let marker_max = string_marker(s.len().max(2)).chars().count();
    match plan(s, limit, marker_max) {
        None => s.to_owned(),
        Some(p) => {
            let middle = s[p.head..p.tail].chars().count();
            format!("{}{}{}", &s[..p.head], string_marker(middle), &s[p.tail..])
        }
    }
}

fn more_items(n: usize) -> String {
    format!("… {}", plural(n, "more item", "more items"))
}

fn more_keys(n: usize) -> String {
    plural(n, "more key", "more keys")
}

/// The key of the member that stands for the members left out.
const MORE_KEY: &str = "…";

fn summary(v: &Value) -> Option<String> {
    match v {
        Value::Array(a) if !a.is_empty() => {
            Some(format!("[… {}]", plural(a.len(), "item", "items")))
        }
        Value::Object(o) if !o.is_empty() => {
            Some(format!("{{… {}}}", plural(o.len(), "key", "keys")))
        }
        _ => None,
    }
}

/// Whether `v` shrunk by `lim` fits the meter.
fn measure(v: &Value, lim: &Shrink, depth: usize, m: &mut Meter) -> bool {
    match v {
        Value::Null | Value::Bool(true) => m.add(4),
        Value::Bool(false) => m.add(5),
        Value::Number(n) => m.add(n.as_str().len()),
        Value::String(s) => {
            let max = m.budget.saturating_sub(m.used);
            m.add(string_chars(s, lim.string, max))
        }
        Value::Array(a) => {
            if depth >= lim.depth
                && let Some(s) = summary(v)
            {
                return m.add(s.chars().count() + 2);
            }
            if !m.add(2) {
                return false;
            }
            for (i, item) in a.iter().take(lim.items).enumerate() {
                if (i > 0 && !m.add(1)) || !measure(item, lim, depth + 1, m) {
                    return false;
                }
            }
            if a.len() > lim.items {
                let more = more_items(a.len() - lim.items);
                return m.add(1 + 2 + more.chars().count());
            }
            true
        }
        Value::Object(o) => {
            if depth >= lim.depth
                && let Some(s) = summary(v)
            {
                return m.add(s.chars().count() + 2);
            }
            if !m.add(2) {
                return false;
            }
            for (i, (k, item)) in o.iter().take(lim.keys).enumerate() {
                let max = m.budget.saturating_sub(m.used);
                if (i > 0 && !m.add(1))
                    || !m.add(string_chars(k, lim.string, max) + 1)
                    || !measure(item, lim, depth + 1, m)
                {
                    return false;
                }
            }
            if o.len() > lim.keys {
                let more = more_keys(o.len() - lim.keys);
                return m.add(1 + 2 + MORE_KEY.chars().count() + 1 + 2 + more.chars().count());
            }
            true
        }
    }
}

/// `v` shrunk by `lim` (what [`measure`] measured; never longer).
fn build(v: &Value, lim: &Shrink, depth: usize) -> Value {
    match v {
        Value::String(s) => Value::String(shrink_string(s, lim.string)),
        Value::Array(a) => {
            if depth >= lim.depth
                && let Some(s) = summary(v)
            {
                return Value::String(s);
            }
            let mut out: Vec<Value> = a
                .iter()
                .take(lim.items)
                .map(|item| build(item, lim, depth + 1))
                .collect();
            if a.len() > lim.items {
                out.push(Value::String(more_items(a.len() - lim.items)));
            }
            Value::Array(out)
        }
        Value::Object(o) => {
            if depth >= lim.depth
                && let Some(s) = summary(v)
            {
                return Value::String(s);
            }
            let mut out = Map::new();
            let mut left_out = o.len().saturating_sub(lim.keys);
            for (k, item) in o.iter().take(lim.keys) {
                let key = shrink_string(k, lim.string);
                if key == MORE_KEY || out.contains_key(&key) {
                    // Two keys cut to the same text: the later one is counted as left out.
                    left_out += 1;
                    continue;
                }
                out.insert(key, build(item, lim, depth + 1));
            }
            if left_out > 0 {
                out.insert(MORE_KEY.to_owned(), Value::String(more_keys(left_out)));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

fn fits(v: &Value, lim: &Shrink, budget: usize) -> bool {
    measure(v, lim, 0, &mut Meter { used: 0, budget })
}

/// The widest limits between `fit` (which fits) and `miss` (which does not, and differs from
/// `fit` by one halving step), found by bisection, so that the preview uses its budget.
/// Limits that differ only in depth are returned as they are.
fn widen(v: &Value, fit: Shrink, miss: Shrink, budget: usize) -> Shrink {
    if fit.depth != miss.depth {
        return fit;
    }
    let between = |t: usize| {
        let mix = |a: usize, b: usize| a + (b.saturating_sub(a)).saturating_mul(t) / 64;
        Shrink {
            string: mix(fit.string, miss.string),
            items: mix(fit.items, miss.items),
            keys: mix(fit.keys, miss.keys),
            depth: fit.depth,
        }
    };
    let (mut lo, mut hi) = (0usize, 64usize);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if fits(v, &between(mid), budget) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    between(lo)
}

/// Characters of `v` as compact JSON, counting at most a little past `max`.
pub(crate) fn json_chars(v: &Value, max: usize) -> usize {
    let mut m = Meter {
        used: 0,
        budget: max,
    };
    measure(v, &UNLIMITED, 0, &mut m);
    m.used
}

/// `v` shrunk structurally so that its compact JSON takes at most `budget` characters;
/// `None` when it fits as it is.
///
/// Limits on string length, array items and object members start near the budget and halve
/// together until the value fits; a member smaller than the limits is never touched, so the
/// largest members shrink first. Once they are at their smallest, nesting deeper than a
/// falling depth is summarised. The last resort is a summary string of the whole value, of
/// at least [`MIN_STRING`] characters (so with a budget below that, the result is longer
/// than the budget); a number or boolean is kept whole.
pub(crate) fn shrink_json(v: &Value, budget: usize) -> Option<Value> {
    if json_chars(v, budget) <= budget {
        return None;
    }
    let mut lim = Shrink {
        string: budget.max(MIN_STRING),
        items: budget / 2 + 1,
        keys: budget / 4 + 1,
        depth: usize::MAX,
    };
    let mut last_miss: Option<Shrink> = None;
    loop {
        if fits(v, &lim, budget) {
            if let Some(miss) = last_miss {
                lim = widen(v, lim, miss, budget);
            }
            return Some(build(v, &lim, 0));
        }
        last_miss = Some(lim);
        if lim.string > MIN_STRING || lim.items > 1 || lim.keys > 1 {
            lim.string = (lim.string / 2).max(MIN_STRING);
            lim.items = (lim.items / 2).max(1);
            lim.keys = (lim.keys / 2).max(1);
        } else if lim.depth == usize::MAX {
            lim.depth = START_DEPTH;
        } else if lim.depth > 0 {
            lim.depth -= 1;
        } else {
            break;
        }
    }
    // Nothing structural fits: a string saying what the value was, cut to the budget but
    // never below [`MIN_STRING`] characters (a cap too small for it is exceeded rather than
    // the result replaced by an empty string); a number is kept whole.
    let room = budget.saturating_sub(2).max(MIN_STRING);
    let text = match v {
        Value::String(s) => shrink_string(s, room),
        other => match summary(other) {
            Some(text) => text,
            None => return Some(v.clone()),
        },
    };
    let end = head_end(&text, room);
    Some(Value::String(text[..end].to_owned()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn text_is_cut_into_head_marker_tail() {
        let s = "a".repeat(100);
        let cut = cut_text(&s, 60).unwrap();
        assert_eq!(
            cut,
            format!(
                "{}[… 68 characters dropped …]{}",
                "a".repeat(16),
                "a".repeat(16)
            )
        );
        // The marker was sized for a three-digit count.
        assert_eq!(cut.chars().count(), 59);
        assert_eq!(cut_text(&s, 100), None);
    }

    #[test]
    fn a_cut_never_splits_an_emoji_with_its_modifier() {
        // A thumbs-up with a skin tone is two chars and one grapheme.
        let s = "👍🏽".repeat(50);
        let cut = cut_text(&s, 70).unwrap();
        let head = cut.split("[…").next().unwrap();
        assert_eq!(head.chars().count() % 2, 0, "{head}");
        let tail = cut.split("…]").nth(1).unwrap();
        assert_eq!(tail.chars().count() % 2, 0, "{tail}");
    }

    #[test]
    fn json_shrinks_the_largest_member_first() {
        let v = json!({"small": [1, 2, 3], "big": "x".repeat(10_000), "n": 5});
        let out = shrink_json(&v, 300).unwrap();
        assert_eq!(out["small"], json!([1, 2, 3]));
        assert_eq!(out["n"], 5);
        let big = out["big"].as_str().unwrap();
        assert!(big.contains("characters dropped"), "{big}");
        assert!(out.to_string().chars().count() <= 300);
    }

    #[test]
    fn json_that_fits_is_untouched() {
        let v = json!({"a": [1, 2, 3]});
        let n = v.to_string().len();
        assert_eq!(json_chars(&v, usize::MAX), n);
        assert_eq!(shrink_json(&v, n), None);
        assert!(shrink_json(&v, n - 1).is_some());
    }

    #[test]
    fn escapes_are_counted_as_serde_writes_them() {
        let v = json!(["a\"b\\c\n\u{1}é😀", {"k\t": null}]);
        assert_eq!(json_chars(&v, usize::MAX), v.to_string().chars().count());
    }

    use proptest::prelude::*;
    use proptest::test_runner::FileFailurePersistence;
    use unicode_segmentation::UnicodeSegmentation;

    /// Text with emoji sequences, combining marks and line breaks.
    fn arb_text() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                Just("a"),
                Just("é"),
                Just("e\u{301}"),
                Just("👍🏽"),
                Just("👩‍👩‍👧‍👦"),
                Just("🇫🇷"),
                Just("\n"),
                Just("語"),
                Just("\""),
            ],
            0..40,
        )
        .prop_flat_map(|parts| (Just(parts.concat()), 1usize..20))
        .prop_map(|(unit, times)| unit.repeat(times))
    }

    fn is_grapheme_boundary(s: &str, at: usize) -> bool {
        at == 0 || at == s.len() || s.grapheme_indices(true).any(|(i, _)| i == at)
    }

    proptest! {
        // Shrunk failures are kept under tests/ (the top level of the repository is fixed).
        #![proptest_config(ProptestConfig {
            failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
                "tests/proptest-regressions/run_code_cap.txt",
            ))),
            ..ProptestConfig::default()
        })]

        #[test]
        fn a_text_cut_fits_and_keeps_whole_graphemes(s in arb_text(), budget in 0usize..300) {
            match cut_text(&s, budget) {
                None => prop_assert!(s.chars().count() <= budget),
                Some(cut) => {
                    prop_assert!(cut.chars().count() <= budget);
                    if let Some((head, rest)) = cut.split_once("[… ") {
                        let tail = rest.rsplit_once(" dropped …]").map(|r| r.1).unwrap_or("");
                        prop_assert!(s.starts_with(head) && is_grapheme_boundary(&s, head.len()));
                        prop_assert!(s.ends_with(tail) && is_grapheme_boundary(&s, s.len() - tail.len()));
                        let dropped = s.chars().count() - head.chars().count() - tail.chars().count();
                        let lines = s[head.len()..s.len() - tail.len()].matches('\n').count();
                        prop_assert_eq!(&cut[head.len()..cut.len() - tail.len()], text_marker(dropped, lines));
                    } else {
                        prop_assert!(s.starts_with(&cut));
                    }
                }
            }
        }

        #[test]
        fn a_json_shrink_fits_and_parses(
            strings in prop::collection::vec(arb_text(), 0..8),
            nest in 0usize..4,
            budget in 0usize..400,
        ) {
            let mut v = json!({"items": strings, "n": 1.5, "ok": true});
            for i in 0..nest {
                v = json!({"level": i, "inner": v, "list": [v.clone(), null]});
            }
            let text = match shrink_json(&v, budget) {
                None => v.to_string(),
                Some(shrunk) => shrunk.to_string(),
            };
            // Below MIN_STRING characters, a summary is kept rather than an empty string.
            prop_assert!(text.chars().count() <= budget.max(MIN_STRING + 2), "{} > {budget}: {text}", text.chars().count());
            prop_assert!(serde_json::from_str::<Value>(&text).is_ok());
        }

        #[test]
        fn a_log_cut_fits(
            lines in prop::collection::vec((arb_text(), any::<bool>()), 0..12),
            budget in 0usize..600,
        ) {
            let entries: Vec<LogEntry> = lines
                .into_iter()
                .map(|(text, warn)| LogEntry {
                    level: if warn { LogLevel::Warn } else { LogLevel::Log },
                    text,
                })
                .collect();
            let view = LogView { head: &entries, tail: &[], dropped_entries: 0, dropped_chars: 0, dropped_newlines: 0 };
            let shown = cut_logs(&view, budget).unwrap_or_else(|| entries.clone());
            let rendered: usize = shown.iter().map(|e| prefix_chars(e.level) + e.text.chars().count() + 1).sum();
            prop_assert!(rendered <= budget, "{rendered} > {budget}");
        }
    }
}
