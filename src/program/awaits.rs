//! The program's awaits: numbered from 1 in source order, each marked so that a run knows
//! the last one the program reached (a deadlock or a failed call then names its line).

use swc_common::{BytePos, Spanned};
use swc_ecma_ast::Module;
use swc_ecma_visit::{Visit, VisitWith};

use super::SourceError;
use super::forms::{Edit, EditKind, import_not_available, token_start};
use super::parse::position_error;
use super::positions::LineIndex;
use super::wrapper::wrapper;

/// Where the program awaits: numbered from 1 in source order, reported when the program
/// deadlocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AwaitSite {
    /// 1-based line in the model's own source.
    pub(crate) line: u32,
    /// 1-based column of `await`.
    pub(crate) column: u32,
    /// The awaited expression as written (shortened).
    pub(crate) text: String,
}

struct AwaitFinder {
    spans: Vec<(BytePos, BytePos, BytePos)>,
    /// The first `import(…)` or `import.meta`, and which: a program has no modules (found
    /// in the same walk, which a program pays for once).
    import: Option<(BytePos, &'static str)>,
}

impl Visit for AwaitFinder {
    fn visit_await_expr(&mut self, e: &swc_ecma_ast::AwaitExpr) {
        self.spans
            .push((e.span.lo, e.arg.span().lo, e.arg.span().hi));
        e.visit_children_with(self);
    }

    fn visit_call_expr(&mut self, c: &swc_ecma_ast::CallExpr) {
        if matches!(c.callee, swc_ecma_ast::Callee::Import(_)) {
            self.import.get_or_insert((c.span.lo, "import()"));
        }
        c.visit_children_with(self);
    }

    fn visit_meta_prop_expr(&mut self, m: &swc_ecma_ast::MetaPropExpr) {
        if m.kind == swc_ecma_ast::MetaPropKind::ImportMeta {
            self.import.get_or_insert((m.span.lo, "import.meta"));
        }
    }
}

/// Numbers the awaits of `module` (parsed from `body`) and plans, into `edits`, the marks
/// that record the await about to happen: `await x` becomes `await (MARK = n, x)` (see
/// [`Wrapper::mark`](super::wrapper::Wrapper::mark)). Returns the awaits with their
/// positions in `body` (1-based line and character column).
///
/// # Errors
/// A [`SourceError`] at the first `import(…)` or `import.meta`.
pub(super) fn mark_awaits(
    body: &str,
    module: &Module,
    edits: &mut Vec<Edit>,
) -> Result<Vec<AwaitSite>, SourceError> {
    let off = |pos: BytePos| (pos.0.saturating_sub(1)) as usize;
    // Mark every await so a deadlock can say where the program waits.
    let mut finder = AwaitFinder {
        spans: Vec::new(),
        import: None,
    };
    module.visit_with(&mut finder);
    if let Some((at, what)) = finder.import {
        return Err(position_error(
            body,
            token_start(body, off(at)),
            import_not_available(what),
        ));
    }
    let mut awaits = Vec::with_capacity(finder.spans.len());
    let lines = LineIndex::new(body);
    for (n, (at, arg_lo, arg_hi)) in finder.spans.into_iter().enumerate() {
        // Past any HTML-like comment swc counts into the spans (see `token_start`).
        let (at, arg_lo) = (token_start(body, off(at)), token_start(body, off(arg_lo)));
        let (line, col) = lines.line_col(body, at);
        let written = &body[arg_lo.min(body.len())..off(arg_hi).min(body.len())];
        // Only the start is shown: nested awaits must not make this quadratic.
        let mut cut = written.len().min(240);
        while !written.is_char_boundary(cut) {
            cut -= 1;
        }
        let mut text: String = written[..cut]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if text.chars().count() > 60 {
            text = text.chars().take(57).collect::<String>() + "…";
        }
        awaits.push(AwaitSite {
            line: line + 1,
            column: col + 1,
            text,
        });
        edits.push(Edit {
            start: arg_lo,
            kind: EditKind::Insert(format!("({} = {}, ", wrapper().mark, n + 1)),
        });
        edits.push(Edit {
            start: off(arg_hi),
            kind: EditKind::Insert(")".to_owned()),
        });
    }
    Ok(awaits)
}
