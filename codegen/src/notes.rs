//! Sentences that recur across tools' descriptions, written once as numbered notes in the
//! compact layout. A server that ends eleven descriptions with "Only works within allowed
//! directories." gets one line `// ¹ Only works within allowed directories.` above the
//! declarations, and each of those descriptions carries the mark `¹` before its last stop
//! instead.

use std::collections::HashMap;

/// Smallest saving, in bytes, for which a recurring sentence becomes a note: (uses − 1) ×
/// its length. Below it, the note's line and marks save a reader too few tokens (about
/// 4.5 bytes make a token of English) to be worth the detour.
const MIN_SAVING: usize = 64;

/// The notes of one set of descriptions, in the order their sentences first appear.
#[derive(Default)]
pub(crate) struct Notes {
    sentences: Vec<String>,
    /// Sentence → its place in `sentences`.
    index: HashMap<String, usize>,
}

impl Notes {
    /// The sentences that recur across `descriptions` (in a description at most once each)
    /// enough to save [`MIN_SAVING`] bytes as notes.
    pub(crate) fn of<'a>(descriptions: impl IntoIterator<Item = &'a str>) -> Notes {
        // Sentence → (uses, the last description it was counted in).
        let mut uses: HashMap<&str, (usize, usize)> = HashMap::new();
        let mut order = Vec::new();
        for (i, d) in descriptions.into_iter().enumerate() {
            for s in sentences(d).map(|r| &d[r]).filter(|s| candidate(s)) {
                let (n, last) = uses.entry(s).or_insert((0, usize::MAX));
                if *last == i {
                    continue;
                }
                if *n == 0 {
                    order.push(s);
                }
                *n += 1;
                *last = i;
            }
        }
        let sentences: Vec<String> = order
            .into_iter()
            .filter(|s| (uses[s].0 - 1) * s.len() >= MIN_SAVING)
            .map(str::to_owned)
            .collect();
        let index = sentences
            .iter()
            .enumerate()
            .map(|(i, s)| (s.clone(), i))
            .collect();
        Notes { sentences, index }
    }

    /// One `// ¹ sentence` line per note; empty when there is none.
    pub(crate) fn lines(&self) -> String {
        let mut out = String::new();
        for (i, s) in self.sentences.iter().enumerate() {
            for piece in ["// ", &mark(i + 1), " ", s, "\n"] {
                out.push_str(piece);
            }
        }
        out
    }

    /// `description` without the sentences that are notes, with their marks before its
    /// last stop (`Make line-based edits to a text file¹.`); unchanged when it has none.
    pub(crate) fn apply<'a>(&self, description: &'a str) -> std::borrow::Cow<'a, str> {
        if self.sentences.is_empty() {
            return description.into();
        }
        let mut kept = Vec::new();
        let mut marks = Vec::new();
        for s in sentences(description).map(|r| &description[r]) {
            match self.index.get(s) {
                Some(&i) => marks.push(i),
                None => kept.push(s),
            }
        }
        if marks.is_empty() {
            return description.into();
        }
        marks.sort_unstable();
        marks.dedup();
        let mut out = kept.join(" ");
        // The marks go before the last sentence's single stop when a letter precedes it,
        // footnote style (`table¹.`: the stop then shares a token with the line break that
        // follows); apart, so that `¹ ²` never reads as `¹²`; after a space when the text
        // ends otherwise (`at most 10. ¹`: `10¹` would read as a power). A description
        // that is only notes says so (`See ¹ ².`), so that it does not read as a note.
        let mut chars = out.chars().rev();
        let stop = match (chars.next(), chars.next()) {
            (Some(stop @ ('.' | '!' | '?')), Some(before)) if before.is_alphabetic() => {
                out.pop();
                Some(stop)
            }
            _ => None,
        };
        let only_notes = out.is_empty();
        if only_notes {
            out.push_str("See");
        }
        for (n, i) in marks.into_iter().enumerate() {
            if n > 0 || only_notes || stop.is_none() {
                out.push(' ');
            }
            out.push_str(&mark(i + 1));
        }
        out.extend(stop);
        if only_notes {
            out.push('.');
        }
        out.into()
    }
}

/// Whether a sentence may be a note: it starts with a capital letter, ends a sentence
/// and stays on one line.
fn candidate(s: &str) -> bool {
    s.starts_with(char::is_uppercase)
        && s.ends_with(['.', '!', '?'])
        && !s.contains(['\n', '\r', '\u{2028}', '\u{2029}'])
}

/// The sentences of `text` as byte ranges: each ends after `.`, `!` or `?` followed by
/// spaces and a capital letter (or at the end of the text), without the spaces between
/// them; what follows the last such end is one more range. A stop followed by a small
/// letter or a digit ends no sentence (`e.g. a file`, `Steps: 1. open`).
fn sentences(text: &str) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    let bytes = text.as_bytes();
    let mut start = 0;
    std::iter::from_fn(move || {
        while start < bytes.len() && bytes[start] == b' ' {
            start += 1;
        }
        if start >= bytes.len() {
            return None;
        }
        let from = start;
        let mut end = bytes.len();
        for i in from..bytes.len() {
            if !matches!(bytes[i], b'.' | b'!' | b'?') {
                continue;
            }
            let rest = &text[i + 1..];
            let next = rest.trim_start_matches(' ');
            if rest.is_empty()
                || (next.len() < rest.len()
                    && next.starts_with(char::is_uppercase)
                    && !abbreviation(&text[from..i]))
            {
                end = i + 1;
                break;
            }
        }
        start = end;
        Some(from..end)
    })
}

/// Whether the word before a stop that ends `before` is an abbreviation, after which a
/// capital letter starts no sentence: a title (`Mr. Smith`), a single letter (`J. Smith`)
/// or a word with a stop inside (`e.g.`, `U.S.`).
fn abbreviation(before: &str) -> bool {
    const TITLES: &[&str] = &[
        "Mr", "Mrs", "Ms", "Dr", "Prof", "Sr", "Jr", "St", "Mt", "vs", "etc", "No", "Inc", "Ltd",
        "Co", "Corp", "Fig", "Vol", "approx", "cf",
    ];
    let word = before.rsplit(' ').next().unwrap_or(before);
    let word = word.trim_start_matches(['(', '"', '\'', '[']);
    word.chars().count() == 1 || word.contains('.') || TITLES.contains(&word)
}

/// `n` in superscript digits (`¹`, `¹²`).
fn mark(n: usize) -> String {
    const DIGITS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    n.to_string()
        .bytes()
        .map(|d| DIGITS[usize::from(d - b'0')])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const WITHIN: &str = "Only works within allowed directories.";

    #[test]
    fn a_sentence_in_enough_descriptions_becomes_one_note_and_a_mark() {
        let a = format!("Read a file. {WITHIN}");
        let b = format!("{WITHIN} List a folder.  Sorted by name.");
        let c = format!("Write a file.   {WITHIN}");
        let notes = Notes::of([a.as_str(), b.as_str(), c.as_str(), "Other."]);
        assert_eq!(notes.lines(), format!("// ¹ {WITHIN}\n"));
        assert_eq!(notes.apply(&a), "Read a file¹.");
        assert_eq!(notes.apply(&b), "List a folder. Sorted by name¹.");
        assert_eq!(notes.apply(&c), "Write a file¹.");
        assert_eq!(notes.apply("Other."), "Other.");
        assert_eq!(notes.apply(WITHIN), "See ¹.");
        // After words without a single stop, the mark stands apart.
        assert_eq!(
            notes.apply(&format!("{WITHIN} More to come")),
            "More to come ¹"
        );
        assert_eq!(
            notes.apply(&format!("{WITHIN} More to come...")),
            "More to come... ¹"
        );
        assert_eq!(notes.apply(&format!("{WITHIN} Really?")), "Really¹?");
        // After a number or a symbol, a mark right before the stop would read as a power.
        for (text, marked) in [
            ("Returns at most 10.", "Returns at most 10. ¹"),
            ("Squared m².", "Squared m². ¹"),
            ("Costs x^2.", "Costs x^2. ¹"),
            ("Ends (quoted).", "Ends (quoted). ¹"),
        ] {
            assert_eq!(notes.apply(&format!("{text} {WITHIN}")), marked);
        }
    }

    #[test]
    fn short_rare_multiline_or_unfinished_sentences_stay_where_they_are() {
        // Twice, 38 bytes: saves less than MIN_SAVING.
        let a = format!("A. {WITHIN}");
        let b = format!("B. {WITHIN}");
        assert_eq!(Notes::of([a.as_str(), b.as_str()]).lines(), "");
        // Twice in one description counts once.
        let twice = format!("{WITHIN} {WITHIN}");
        assert_eq!(Notes::of([twice.as_str(), "x"]).lines(), "");
        // Across a line break, or without a final stop.
        let multi = "First line\nsecond line of the same long sentence, repeated.";
        let open = "A sentence without its full stop that goes on and on and on";
        for d in [multi, open] {
            assert_eq!(Notes::of([d, d, d, d]).lines(), "", "{d:?}");
        }
    }

    #[test]
    fn abbreviations_and_numbered_steps_end_no_sentence() {
        let d = "Search for things, e.g. files or folders. Tool number 1 does stuff, i.e. it works. Steps: 1. open it 2. read it.";
        let all: Vec<&str> = sentences(d).map(|r| &d[r]).collect();
        assert_eq!(
            all,
            [
                "Search for things, e.g. files or folders.",
                "Tool number 1 does stuff, i.e. it works.",
                "Steps: 1. open it 2. read it."
            ]
        );
        let e = d.replace("number 1", "number 2");
        let f = d.replace("number 1", "number 3");
        let notes = Notes::of([d, e.as_str(), f.as_str()]);
        // The steps, three times 29 bytes, save less than MIN_SAVING.
        assert_eq!(
            notes.lines(),
            "// ¹ Search for things, e.g. files or folders.\n"
        );
        assert_eq!(
            notes.apply(d),
            "Tool number 1 does stuff, i.e. it works. Steps: 1. open it 2. read it¹."
        );
        // Titles, initials and words with stops inside end no sentence either.
        let d = "Ask Mr. Smith or J. Doe, e.g. Alice. Not in the U.S. Army. Done.";
        let all: Vec<&str> = sentences(d).map(|r| &d[r]).collect();
        assert_eq!(
            all,
            [
                "Ask Mr. Smith or J. Doe, e.g. Alice.",
                "Not in the U.S. Army.",
                "Done."
            ]
        );
        // A sentence that starts small is no note.
        let small = "then it works as it always did before.";
        assert_eq!(Notes::of([small, small, small]).lines(), "");
    }

    #[test]
    fn many_notes_are_numbered_in_order_of_first_use() {
        let texts: Vec<String> = (0..12)
            .map(|i| format!("Sentence number {i} is long enough to become a note."))
            .collect();
        let description = texts.join(" ");
        let notes = Notes::of([description.as_str(), description.as_str(), &description]);
        let lines = notes.lines();
        assert!(lines.starts_with("// ¹ Sentence number 0 "), "{lines}");
        assert!(lines.contains("\n// ¹² Sentence number 11 "), "{lines}");
        assert_eq!(notes.apply(&description), "See ¹ ² ³ ⁴ ⁵ ⁶ ⁷ ⁸ ⁹ ¹⁰ ¹¹ ¹².");
        assert_eq!(mark(0), "⁰");
        assert_eq!(mark(305), "³⁰⁵");
    }
}
