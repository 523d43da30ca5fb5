//! Program forms: what a program's text means as the body of an async function.
//!
//! A body with top-level `return` and `await` runs as written; the value of a last
//! expression statement is the result; `export default <expr>` is the result (called when
//! it is a function); an `async function main()` that is never called is called; a
//! program that only declares functions and calls none is refused. Every change keeps
//! lines and columns or is recorded as an insertion.

use swc_common::{BytePos, Spanned};
use swc_ecma_ast::{
    Decl, ExportDefaultDecl, ExportDefaultExpr, Ident, ImportDecl, Module, ModuleDecl, ModuleItem,
    Stmt,
};
use swc_ecma_visit::{Visit, VisitWith};

use super::awaits::{AwaitSite, mark_awaits};
use super::fences::without_hashbang;
use super::parse::{Parsed, parse, position_error};
use super::wrapper::wrapper;
use super::{SourceError, SourceErrorKind};

/// What an [`Edit`] does at its start.
pub(super) enum EditKind {
    /// Inserts text (recorded in the position map: it shifts later columns).
    Insert(String),
    /// Replaces the text up to byte `end` with text of the same length in characters and
    /// with the same line breaks (positions stay).
    Replace { end: usize, text: String },
}

/// One change to the program body, at byte `start`.
pub(super) struct Edit {
    pub(super) start: usize,
    pub(super) kind: EditKind,
}

/// How a program body becomes the body of the wrapper's function.
pub(super) struct Plan {
    /// The edits, by start (at one start, in the order planned).
    pub(super) edits: Vec<Edit>,
    /// A statement appended on a line of its own after the body.
    pub(super) append: Option<String>,
    /// Whether the result is an `export default` value, to call when it is a function.
    pub(super) call_default: bool,
    /// The awaits, positions in the body.
    pub(super) awaits: Vec<AwaitSite>,
}

/// Spaces of the same length as `text[start..end]`, keeping its line breaks.
fn blank(text: &str, start: usize, end: usize) -> String {
    text[start..end]
        .chars()
        .map(|c| if c == '\n' || c == '\r' { c } else { ' ' })
        .collect()
}

/// Recognises the form of `module` (parsed from `body`) and plans the edits that make it
/// the body of an async function: `import type` and `export` keywords blanked, `export
/// default X` returned, the last expression statement returned, an `async function main()`
/// never called called, and every await marked.
///
/// # Errors
/// A [`SourceError`] for an `import` of values, an `export` a function body cannot hold, or
/// a program that only declares functions and calls none.
pub(super) fn plan_edits(body: &str, module: &Module) -> Result<Plan, SourceError> {
    let off = |pos: BytePos| (pos.0.saturating_sub(1)) as usize;
    let mut edits = Vec::new();
    let mut call_default = false;
    for item in &module.body {
        let ModuleItem::ModuleDecl(decl) = item else {
            continue;
        };
        match decl {
            ModuleDecl::Import(ImportDecl {
                span, type_only, ..
            }) => {
                if *type_only {
                    edits.push(Edit {
                        start: off(span.lo),
                        kind: EditKind::Replace {
                            end: off(span.hi),
                            text: blank(body, off(span.lo), off(span.hi)),
                        },
                    });
                } else {
                    return Err(position_error(
                        body,
                        off(span.lo),
                        "`import` is not available: a program runs alone, without modules; call tools through `tools.<name>(args)`".into(),
                    ));
                }
            }
            ModuleDecl::ExportDecl(_)
            | ModuleDecl::ExportDefaultExpr(_)
            | ModuleDecl::ExportDefaultDecl(_) => {
                edits.extend(export_edit(body, decl));
                call_default |= !matches!(decl, ModuleDecl::ExportDecl(_));
            }
            other => {
                return Err(position_error(
                    body,
                    off(other.span().lo),
                    "this kind of `export` is not available: return the result instead (`return value`)".into(),
                ));
            }
        }
    }

    // The value of a last expression statement is the result.
    let mut append = None;
    match module.body.last() {
        Some(ModuleItem::Stmt(Stmt::Expr(e))) => {
            edits.push(Edit {
                start: off(e.expr.span().lo),
                kind: EditKind::Insert(format!("{}=true;return ", wrapper().implicit)),
            });
        }
        _ => {
            let functions: Vec<&Ident> = module
                .body
                .iter()
                .filter_map(|item| match item {
                    ModuleItem::Stmt(Stmt::Decl(Decl::Fn(f))) => Some(&f.ident),
                    _ => None,
                })
                .collect();
            let uses = |name: &str| {
                let mut counter = IdentCounter { name, count: 0 };
                module.visit_with(&mut counter);
                counter.count
            };
            if let Some(main) = functions.iter().find(|i| &*i.sym == "main")
                && uses(&main.sym) <= 1
            {
                append = Some("return await main();".to_owned());
            } else if !functions.is_empty()
                && !call_default
                && module.body.iter().all(is_declaration)
                && functions.iter().all(|f| uses(&f.sym) <= 1)
            {
                let names: Vec<String> = functions.iter().map(|f| format!("{}()", f.sym)).collect();
                let first = &functions[0];
                return Err(SourceError {
                    kind: SourceErrorKind::Unrunnable,
                    message: format!(
                        "the program only declares {} and never calls anything, so nothing would run; call it, e.g. `return await {}()`",
                        names.join(", "),
                        first.sym
                    ),
                    line: None,
                    column: None,
                });
            }
        }
    }
    let awaits = mark_awaits(body, module, &mut edits);
    // Stable: at one position, inserts keep the order they were planned in.
    edits.sort_by_key(|e| e.start);
    Ok(Plan {
        edits,
        append,
        call_default,
        awaits,
    })
}

fn is_declaration(item: &ModuleItem) -> bool {
    match item {
        ModuleItem::Stmt(Stmt::Decl(_)) | ModuleItem::Stmt(Stmt::Empty(_)) => true,
        ModuleItem::ModuleDecl(ModuleDecl::Import(i)) => i.type_only,
        ModuleItem::ModuleDecl(ModuleDecl::ExportDecl(_)) => true,
        _ => false,
    }
}

/// The edit that makes a top-level `export` a statement a function body can hold, keeping
/// positions: `export const x` → `       const x`, `export default X` → `return         X`.
/// `None` for other module declarations.
fn export_edit(body: &str, decl: &ModuleDecl) -> Option<Edit> {
    let off = |pos: BytePos| (pos.0.saturating_sub(1)) as usize;
    match decl {
        ModuleDecl::ExportDecl(e) => {
            let (start, end) = (off(e.span.lo), off(e.decl.span().lo));
            Some(Edit {
                start,
                kind: EditKind::Replace {
                    end,
                    text: blank(body, start, end),
                },
            })
        }
        ModuleDecl::ExportDefaultExpr(ExportDefaultExpr { span, expr }) => Some(
            return_instead_of_export(body, off(span.lo), off(expr.span().lo)),
        ),
        ModuleDecl::ExportDefaultDecl(ExportDefaultDecl { span, decl }) => Some(
            return_instead_of_export(body, off(span.lo), off(decl.span().lo)),
        ),
        _ => None,
    }
}

/// `body` with its top-level `export`s made statements ([`export_edit`]), for checking the
/// program as the body of a function (`codemode check --tsc`); `body` itself when it does
/// not parse (the compiler then reports the syntax error) or exports nothing.
pub(crate) fn exports_as_statements(body: &str) -> String {
    let body = &*without_hashbang(body);
    let Ok(Parsed { module, .. }) = parse(body) else {
        return body.to_owned();
    };
    let mut out = String::with_capacity(body.len());
    let mut last = 0;
    for item in &module.body {
        if let ModuleItem::ModuleDecl(decl) = item
            && let Some(Edit {
                start,
                kind: EditKind::Replace { end, text },
            }) = export_edit(body, decl)
        {
            out.push_str(&body[last..start]);
            out.push_str(&text);
            last = end;
        }
    }
    out.push_str(&body[last..]);
    out
}

/// `export default X` → `return         X` (same length, so positions stay).
fn return_instead_of_export(body: &str, start: usize, expr_start: usize) -> Edit {
    let mut text = String::from("return");
    let width = body[start..expr_start].chars().count();
    let keep_lines = blank(body, start, expr_start);
    // Keep any line breaks between `export default` and the expression.
    if keep_lines.contains('\n') {
        text = keep_lines.replacen("      ", "return", 1);
    } else {
        while text.chars().count() < width {
            text.push(' ');
        }
    }
    Edit {
        start,
        kind: EditKind::Replace {
            end: expr_start,
            text,
        },
    }
}

struct IdentCounter<'a> {
    name: &'a str,
    count: usize,
}

impl Visit for IdentCounter<'_> {
    fn visit_ident(&mut self, i: &Ident) {
        if &*i.sym == self.name {
            self.count += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::program::prepare;
    use crate::program::wrapper::wrapper;

    #[test]
    fn last_expression_becomes_the_result() {
        let p = prepare("const a = 1;\na + 1").unwrap();
        let implicit = format!("{}=true;return a + 1", wrapper().implicit);
        assert!(p.code.contains(&implicit), "{}", p.code);
        assert!(p.code.starts_with(&wrapper().prefix));
    }

    #[test]
    fn uncalled_main_is_called() {
        let p = prepare("async function main() { return 5 }").unwrap();
        assert!(p.code.contains("return await main();"));
        let e = prepare("function helper() { return 5 }").unwrap_err();
        assert!(e.message.contains("never calls"), "{}", e.message);
    }
}
