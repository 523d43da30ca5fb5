//! The program's awaits: numbered from 1 in source order, each marked so that a run knows
//! the last one the program reached (a deadlock or a failed call then names its line).

use swc_common::{BytePos, Spanned};
use swc_ecma_ast::Module;
use swc_ecma_visit::{Visit, VisitWith};

use super::forms::{Edit, EditKind, token_start};
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
}

impl Visit for AwaitFinder {
    fn visit_await_expr(&mut self, e: &swc_ecma_ast::AwaitExpr) {
        self.spans
            .push((e.span.lo, e.arg.span().lo, e.arg.span().hi));
        e.visit_children_with(self);
    }
}

/// Numbers the awaits of `module` (parsed from `body`) and plans, into `edits`, the marks
/// that record the await about to happen: `await x` becomes `await (MARK = n, x)` (see
/// [`Wrapper::mark`](super::wrapper::Wrapper::mark)). Returns the awaits with their
/// positions in `body` (1-based line and character column).
pub(super) fn mark_awaits(body: &str, module: &Module, edits: &mut Vec<Edit>) -> Vec<AwaitSite> {
    let off = |pos: BytePos| (pos.0.saturating_sub(1)) as usize;
    // Mark every await so a deadlock can say where the program waits.
    let mut finder = AwaitFinder { spans: Vec::new() };
    module.visit_with(&mut finder);
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
    awaits
}
