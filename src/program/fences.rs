//! The text around a program: markdown fences and prose, and a hashbang line.

use swc_ecma_ast::{Module, Tpl, UnaryExpr, UnaryOp};
use swc_ecma_visit::{Visit, VisitWith};

use super::parse::parse;

/// Finds the program inside markdown fences. Returns the body and how many lines precede
/// it in `source`.
pub(crate) fn unfence(source: &str) -> (&str, u32) {
    let is_fence = |line: &str| {
        // A byte order mark may open the text.
        let line = line.strip_prefix('\u{FEFF}').unwrap_or(line);
        let t = line.trim_start_matches(' ');
        line.len() - t.len() <= 3 && (t.starts_with("```") || t.starts_with("~~~"))
    };
    if !source.lines().any(is_fence) {
        return (source, 0);
    }
    // A fence inside a comment or a template literal of a program that parses as it is
    // belongs to the program. Text that opens with a fence is fenced (it may parse too:
    // ``` `ts …` ``` is a chain of tagged templates).
    let opens_with_fence = source
        .lines()
        .find(|l| !l.trim().is_empty())
        .is_some_and(is_fence);
    if !opens_with_fence
        && let Ok(parsed) = parse(source)
        && !fence_is_code(source, &parsed.module, is_fence)
    {
        return (source, 0);
    }
    // Blocks: (tag, body start byte, body end byte, lines before body).
    let mut blocks: Vec<(String, usize, usize, u32)> = Vec::new();
    let mut offset = 0usize;
    // The open block: its tag, fence (character and length), body start, lines before.
    let mut open: Option<(String, (char, usize), usize, u32)> = None;
    for (index, line) in source.split_inclusive('\n').enumerate() {
        let content = line.trim_end_matches(['\n', '\r']);
        if is_fence(content) {
            let (fence, rest) = fence_of(content);
            match open.take() {
                None => {
                    let tag = rest.trim().to_ascii_lowercase();
                    open = Some((tag, fence, offset + line.len(), index as u32 + 1));
                }
                // As CommonMark closes a code block: the same character, at least as many
                // times, and nothing after it but spaces.
                Some((tag, opened, start, lines)) => {
                    if fence.0 == opened.0 && fence.1 >= opened.1 && rest.trim().is_empty() {
                        blocks.push((tag, start, offset, lines));
                    } else {
                        open = Some((tag, opened, start, lines));
                    }
                }
            }
        }
        offset += line.len();
    }
    if let Some((tag, _, start, lines)) = open {
        blocks.push((tag, start, source.len(), lines));
    }
    let code_tag = |t: &str| {
        let t = t.split_whitespace().next().unwrap_or("");
        matches!(
            t,
            "" | "js" | "javascript" | "ts" | "typescript" | "mjs" | "jsx" | "tsx"
        )
    };
    let chosen = blocks
        .iter()
        .find(|b| code_tag(&b.0))
        .or_else(|| blocks.first());
    match chosen {
        Some((_, start, end, lines)) => (&source[*start..*end], *lines),
        None => (source, 0),
    }
}

/// A fence line's fence (its character and how many times it repeats) and what follows.
fn fence_of(line: &str) -> ((char, usize), &str) {
    let line = line.strip_prefix('\u{FEFF}').unwrap_or(line);
    let t = line.trim_start_matches(' ');
    let c = if t.starts_with('~') { '~' } else { '`' };
    let rest = t.trim_start_matches(c);
    ((c, t.len() - rest.len()), rest)
}

/// Whether a fence line of `source` (parsed as `module`) is read as code: prose that
/// parses (`Solution:` is a label) before a fence, whose backticks are template literals
/// and whose tildes bitwise nots. A fence a program holds is inside a comment (a template
/// literal ends at an unescaped backtick), where no expression starts.
fn fence_is_code(source: &str, module: &Module, is_fence: impl Fn(&str) -> bool) -> bool {
    struct Starts(Vec<u32>);
    impl Visit for Starts {
        fn visit_tpl(&mut self, tpl: &Tpl) {
            self.0.push(tpl.span.lo.0);
            tpl.visit_children_with(self);
        }
        fn visit_unary_expr(&mut self, e: &UnaryExpr) {
            if e.op == UnaryOp::Tilde {
                self.0.push(e.span.lo.0);
            }
            e.visit_children_with(self);
        }
    }
    let mut starts = Starts(Vec::new());
    module.visit_with(&mut starts);
    let mut offset = 0;
    source.split_inclusive('\n').any(|line| {
        let start = offset;
        offset += line.len();
        let indent = line.len() - line.trim_start_matches(' ').len();
        // Spans start at 1.
        is_fence(line.trim_end_matches(['\n', '\r']))
            && starts.0.contains(&((start + indent) as u32 + 1))
    })
}

/// `body` with a leading `#!` line written as a `//` comment (same length: positions stay),
/// since the program runs inside a wrapper where a hashbang is not at the start.
pub(super) fn without_hashbang(body: &str) -> std::borrow::Cow<'_, str> {
    // A byte order mark (U+FEFF, whitespace to JavaScript) may come first.
    let bom = if body.starts_with('\u{FEFF}') {
        '\u{FEFF}'.len_utf8()
    } else {
        0
    };
    match body[bom..].strip_prefix("#!") {
        Some(rest) => format!("{}//{rest}", &body[..bom]).into(),
        None => body.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::prepare;

    #[test]
    fn prose_that_parses_before_a_fence_is_prose() {
        // `Solution:` is a label and the fence a chain of tagged templates: still a fence.
        let (body, lines) = unfence("Solution:\n```ts\nreturn 1\n```\n");
        assert_eq!((body, lines), ("return 1\n", 2));
        // The same with tildes (bitwise nots), and a byte order mark before a fence.
        assert_eq!(
            unfence("Answer:\n~~~ts\nreturn 2\n~~~\nDone\n"),
            ("return 2\n", 2)
        );
        assert_eq!(unfence("\u{FEFF}```ts\nreturn 4\n```\n"), ("return 4\n", 1));
    }

    #[test]
    fn a_block_closes_at_a_fence_as_long_of_the_same_character_alone_on_its_line() {
        // A shorter fence, another character, or text after the fence is the block's text.
        let text = "prose\n````js\nconst s = `\n```\n~~~~\n```` x\n`;\nreturn s\n`````\nafter\n";
        assert_eq!(
            unfence(text),
            ("const s = `\n```\n~~~~\n```` x\n`;\nreturn s\n", 2)
        );
        assert_eq!(unfence("~~~\nreturn 1\n~~~~  \nafter\n"), ("return 1\n", 1));
    }

    #[test]
    fn fences_and_prose_are_removed_and_lines_kept() {
        let p = prepare("Here it is:\n```ts\nconst x: number = 1;\nx\n```\nDone.").unwrap();
        assert!(!p.code.contains("Here"));
        assert!(p.code.contains("const x         = 1;"), "{}", p.code);
        // the program's line 2, the engine's line 3 (after the wrapper's line), is line 4 of
        // the model's text
        assert_eq!(p.original_position(3, 1).map(|p| p.0), Some(4));
    }

    #[test]
    fn fences_inside_a_program_that_parses_belong_to_it() {
        let in_comment = "/* Usage:\n```ts\nawait tools.glob({})\n```\n*/\nreturn 1";
        assert_eq!(unfence(in_comment), (in_comment, 0));
        let in_template = "const md = `\n~~~\nx\n~~~\n`;\nreturn md";
        assert_eq!(unfence(in_template), (in_template, 0));
        assert_eq!(
            unfence("Run this:\n```\nreturn 1\n```\n"),
            ("return 1\n", 2)
        );
    }
}
