//! Positions: where lines end, character columns, and the map from the code the engine
//! runs back to the model's own source.
//!
//! Lines end where ECMAScript's do (`\n`, `\r`, `\r\n`, U+2028, U+2029); columns are
//! counted in characters (Unicode scalar values), while the engine reports UTF-8 bytes.

use super::Program;

/// Where the edits of [`prepare`](super::prepare) moved the model's text.
#[derive(Debug, Clone, Default)]
pub(super) struct PositionMap {
    /// Lines the wrapper takes whole before the program's first line.
    pub(super) prefix_lines: u32,
    /// Characters of the wrapper before the program on the program's first line.
    pub(super) prefix: u32,
    /// Lines of prose and fence before the program in the model's text.
    pub(super) line_offset: u32,
    /// Insertions into the body: (0-based line, 0-based char column where inserted,
    /// inserted chars).
    pub(super) insertions: Vec<(u32, u32, u32)>,
}

impl Program {
    /// Maps a 1-based (line, column) in [`Program::code`], as the engine counts them, to the
    /// model's source; `None` for a position in the wrapper around the program (QuickJS
    /// reports the start of the program's function for some errors in declarations: no
    /// position beats a wrong one).
    pub(crate) fn original_position(&self, line: u32, column: u32) -> Option<(u32, u32)> {
        self.original_position_in(line, column, &mut None)
    }

    /// [`original_position`](Self::original_position), with the code's line index made once
    /// for many look-ups.
    fn original_position_in(
        &self,
        line: u32,
        column: u32,
        index: &mut Option<LineIndex>,
    ) -> Option<(u32, u32)> {
        let (line, column) = self.char_position(line, column, index);
        let first = self.map.prefix_lines + 1;
        if line < first || (line == first && column <= self.map.prefix) {
            return None;
        }
        Some(self.map.original(line, column))
    }

    /// The 1-based character column of the engine's 1-based `line` and UTF-8 byte
    /// `column`. The engine ends lines in code where ECMAScript does (`\n`, `\r\n`, a lone
    /// `\r`, U+2028, U+2029), so the line is the same.
    fn char_position(&self, line: u32, column: u32, index: &mut Option<LineIndex>) -> (u32, u32) {
        let code = self.code.as_str();
        let index = index.get_or_insert_with(|| LineIndex::new(code));
        let Some(&start) = index.starts.get(line.saturating_sub(1) as usize) else {
            return (line, column);
        };
        let end = index
            .starts
            .get(line as usize)
            .copied()
            .unwrap_or(code.len());
        let mut byte = (start + column.saturating_sub(1) as usize).min(end);
        while !code.is_char_boundary(byte) {
            byte -= 1;
        }
        (line, index.line_col(code, byte).1 + 1)
    }

    /// `text` (a stack trace the engine wrote) as the model reads it:
    /// - the program's frames, `(FILE:LINE:COLUMN)` where `file` is the name it runs under,
    ///   in the model's own source; a position in the wrapper around the program (or on the
    ///   engine's line 0) keeps only `(FILE)`. Only a frame's parenthesised position, at the
    ///   end of its line, is read: a function's name that looks like one is left alone;
    /// - the sandbox's own frames left out: the prelude's (its bytecode has no file, so the
    ///   engine writes `(<null>:0:1)`), the `apply`, `call` or `construct` through which
    ///   the prelude called the program's function (a timer's callback, an `export default`
    ///   function) or a built-in (the recorded clock's `Date` of a run that may pause),
    ///   and an array guard's (native, named as the built-in it guards, right below that
    ///   built-in's own frame: `at sort (native)` once for a guarded `sort`), as Node leaves
    ///   out its internals' frames in the same places. The text cannot tell a guard's frame
    ///   from a native function of the same name: one that calls itself at once (a
    ///   `String.prototype.concat` reached again through `toString`) loses every second
    ///   frame of the run, and a guard renamed by the program keeps its frame.
    ///
    /// `None` when nothing changes.
    pub(crate) fn stack_in_source(&self, text: &str, file: &str) -> Option<String> {
        let opening = format!("({file}:");
        let mut index = None;
        let mut out = String::with_capacity(text.len());
        let mut changed = false;
        // A native `apply`, `call` or `construct` frame, written only when the frame after
        // it is not the prelude's.
        let mut held: Option<&str> = None;
        // A guarded built-in's frame just written: the same line next is its guard's.
        let mut guarded: Option<&str> = None;
        for line in text.split_inclusive('\n') {
            let frame = line.strip_suffix('\n').unwrap_or(line);
            let prelude = frame.ends_with(')')
                && frame
                    .rfind(" (")
                    .is_some_and(|at| frame[at + 2..].starts_with("<null>:"));
            if prelude {
                held = None;
                guarded = None;
                changed = true;
                continue;
            }
            if let Some(held) = held.take() {
                out.push_str(held);
            }
            if guarded.take() == Some(frame) {
                changed = true;
                continue;
            }
            if let Some(name) = frame
                .trim_start()
                .strip_prefix("at ")
                .and_then(|f| f.strip_suffix(" (native)"))
                && crate::sandbox::is_guarded(name)
            {
                guarded = Some(frame);
            }
            if matches!(
                frame.trim_start(),
                "at apply (native)" | "at call (native)" | "at construct (native)"
            ) {
                held = Some(line);
                continue;
            }
            // After the file's name, where `:LINE:COLUMN)` starts.
            let mapped = line.rfind(&opening).and_then(|found| {
                let after = found + opening.len() - 1;
                let (l, c, end) = line_and_column(&line[after..])?;
                let position = match self.original_position_in(l, c, &mut index) {
                    Some((ol, oc)) if l > 0 => format!(":{ol}:{oc}"),
                    _ => String::new(),
                };
                Some((after, position, after + end))
            });
            match mapped {
                Some((after, position, end)) => {
                    out.push_str(&line[..after]);
                    out.push_str(&position);
                    out.push_str(&line[end..]);
                    changed = true;
                }
                None => out.push_str(line),
            }
        }
        if let Some(held) = held {
            out.push_str(held);
        }
        changed.then_some(out)
    }
}

/// `:LINE:COLUMN)` at the start of `text`, at the end of its line: the line, the column and
/// the bytes they take (the closing parenthesis stays).
fn line_and_column(text: &str) -> Option<(u32, u32, usize)> {
    let digits = |s: &str| s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let rest = text.strip_prefix(':')?;
    let l = digits(rest);
    let line = rest[..l].parse().ok()?;
    let rest = rest[l..].strip_prefix(':')?;
    let c = digits(rest);
    let column = rest[..c].parse().ok()?;
    // The engine ends a frame's line with its position: `(…)` earlier on the line is part
    // of the function's name.
    let after = &rest[c..];
    (after.starts_with(")\n") || after == ")").then_some((line, column, 1 + l + 1 + c))
}

impl PositionMap {
    /// Maps a 1-based (line, character column) in the wrapped code to the model's source:
    /// the wrapper's prefix and the recorded insertions are taken out, the lines before the
    /// program added.
    pub(super) fn original(&self, line: u32, column: u32) -> (u32, u32) {
        let l0 = line.saturating_sub(1).saturating_sub(self.prefix_lines);
        let mut c0 = column.saturating_sub(1);
        if l0 == 0 {
            c0 = c0.saturating_sub(self.prefix);
        }
        // Insertions on the line, in order: a column past one loses its length, and a
        // column inside the inserted text is where it was inserted.
        let mut shift = 0;
        for &(_, ic, len) in self.insertions.iter().filter(|i| i.0 == l0) {
            let at = ic + shift;
            if c0 < at {
                break;
            }
            if c0 < at + len {
                return (l0 + 1 + self.line_offset, ic + 1);
            }
            shift += len;
        }
        (l0 + 1 + self.line_offset, c0 - shift + 1)
    }
}

/// 0-based line and char column of byte `offset` in `text`.
pub(super) fn line_col(text: &str, offset: usize) -> (u32, u32) {
    LineIndex::new(text).line_col(text, offset)
}

/// Where each line starts, for many line/column look-ups in one text.
pub(crate) struct LineIndex {
    starts: Vec<usize>,
    /// Whether each line is ASCII (then a column is a byte difference, so a look-up costs
    /// no scan of the line: one long line with many look-ups stays linear).
    ascii: Vec<bool>,
}

impl LineIndex {
    /// Lines end where ECMAScript's do: at `\n`, `\r` (once for `\r\n`), U+2028 and U+2029,
    /// as the engine and the TypeScript compiler count them.
    pub(crate) fn new(text: &str) -> Self {
        let mut starts = vec![0];
        let bytes = text.as_bytes();
        starts.extend(
            text.match_indices(['\n', '\r', '\u{2028}', '\u{2029}'])
                .filter(|&(i, m)| !(m == "\r" && bytes.get(i + 1) == Some(&b'\n')))
                .map(|(i, m)| i + m.len()),
        );
        let ascii = starts
            .iter()
            .enumerate()
            .map(|(i, &start)| {
                let end = starts.get(i + 1).copied().unwrap_or(text.len());
                text.as_bytes()[start..end].is_ascii()
            })
            .collect();
        LineIndex { starts, ascii }
    }

    /// 0-based line and char column of byte `offset`.
    pub(crate) fn line_col(&self, text: &str, offset: usize) -> (u32, u32) {
        let offset = offset.min(text.len());
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let start = self.starts[line];
        let col = if self.ascii[line] {
            offset - start
        } else {
            text.get(start..offset).map_or(0, |t| t.chars().count())
        };
        (line as u32, col as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::prepare;

    #[test]
    fn every_ecmascript_line_terminator_ends_a_line() {
        for text in ["a\nb", "a\r\nb", "a\rb", "a\u{2028}b", "a\u{2029}b"] {
            let at = text.len() - 1;
            assert_eq!(LineIndex::new(text).line_col(text, at), (1, 0), "{text:?}");
        }
        let e = prepare("const a = 1;\r  const b = ;").unwrap_err();
        assert_eq!((e.line, e.column), (Some(2), Some(13)));
    }

    #[test]
    fn stack_traces_are_put_in_the_model_s_coordinates() {
        let p = prepare("const x = await f();\nnull.y").unwrap();
        // The wrapper's prefix takes the engine's line 1: the program's lines 1 and 2 are
        // its lines 2 and 3.
        let (line1, line2) = (
            p.code.split('\n').nth(1).unwrap(),
            p.code.split('\n').nth(2).unwrap(),
        );
        // `f` on line 1 and `null` on line 2, where the engine sees them.
        let f = line1.find("f()").unwrap() as u32 + 1;
        let null = line2.find("null").unwrap() as u32 + 1;
        let text = format!(
            "    at g (program.js:2:{f})\n    at program (program.js:3:{null})\n    at run (program.js:1:3)\n    at h (other.js:1:{f})\n    at k (program.js)\n    at <anonymous> (program.js:0:1)\n"
        );
        assert_eq!(
            p.stack_in_source(&text, "program.js").unwrap(),
            format!(
                "    at g (program.js:1:17)\n    at program (program.js:2:1)\n    at run (program.js)\n    at h (other.js:1:{f})\n    at k (program.js)\n    at <anonymous> (program.js)\n"
            )
        );
        // A name that looks like a position is a name.
        let named = format!(
            "    at see program.js:2:{f} or (program.js:3:{null}x) (program.js:1:1) (program.js:3:{null})\n"
        );
        assert_eq!(
            p.stack_in_source(&named, "program.js").unwrap(),
            format!(
                "    at see program.js:2:{f} or (program.js:3:{null}x) (program.js:1:1) (program.js:2:1)\n"
            )
        );
        assert_eq!(
            p.stack_in_source("    at k (program.js)\n", "program.js"),
            None
        );
        assert_eq!(p.stack_in_source("(program.js:", "program.js"), None);
        // The prelude's frames go, with the `apply` it called the program's function
        // through; the program's own `apply`, and a native `sort`, stay.
        let through = format!(
            "    at <anonymous> (program.js:3:{null})\n    at apply (native)\n    at fire (<null>:0:1)\n"
        );
        assert_eq!(
            p.stack_in_source(&through, "program.js").unwrap(),
            "    at <anonymous> (program.js:2:1)\n"
        );
        let sorted = format!(
            "    at cmp (program.js:3:{null})\n    at sort (native)\n    at apply (native)\n    at sort (<null>:0:1)\n    at call (native)\n    at g (program.js:3:{null})\n    at apply (native)\n    at runDefault (<null>:0:1)\n    at apply (native)"
        );
        assert_eq!(
            p.stack_in_source(&sorted, "program.js").unwrap(),
            "    at cmp (program.js:2:1)\n    at sort (native)\n    at call (native)\n    at g (program.js:2:1)\n    at apply (native)"
        );
        assert_eq!(
            p.stack_in_source(
                "    at f (<null>:0:1) or (x)\n    at apply (native)\n",
                "program.js"
            ),
            None
        );
        // The `Reflect.construct` the recorded clock's `Date` calls goes with the prelude's
        // frame; the program's own stays.
        let constructed = format!(
            "    at valueOf (program.js:3:{null})\n    at Date (native)\n    at construct (native)\n    at construct (<null>:0:1)\n    at make (program.js:3:{null})\n    at construct (native)\n    at g (program.js:3:{null})\n"
        );
        assert_eq!(
            p.stack_in_source(&constructed, "program.js").unwrap(),
            "    at valueOf (program.js:2:1)\n    at Date (native)\n    at make (program.js:2:1)\n    at construct (native)\n    at g (program.js:2:1)\n"
        );
    }

    #[test]
    fn insertion_shifts_only_later_columns() {
        let p = prepare("x.y").unwrap();
        // `return ` (after the implicit-result flag) was inserted before x, on the
        // engine's line 2, after the wrapper's line.
        let col_in_code = p.code.split('\n').nth(1).unwrap().find("x.y").unwrap() as u32 + 1;
        assert_eq!(p.original_position(2, col_in_code), Some((1, 1)));
        assert_eq!(p.original_position(2, col_in_code + 2), Some((1, 3)));
        assert_eq!(p.original_position(2, 1), Some((1, 1)));
        assert_eq!(p.original_position(1, 1), None);
        assert_eq!(p.original_position(1, 30), None);
    }
}
