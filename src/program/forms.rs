//! Program forms: what a program's text means as the body of an async function.
//!
//! A body with top-level `return` and `await` runs as written; the value of a last
//! expression statement is the result; `export default <expr>` is the result (assigned
//! where it stands, returned at the end, called when it is a function other than a class);
//! an `async function main()` that is never called is called; a
//! program that only declares functions and calls none is refused. Every change keeps
//! lines and columns or is recorded as an insertion.

use swc_common::{BytePos, Spanned};
use swc_ecma_ast::{
    ArrowExpr, CallExpr, Callee, Decl, DefaultDecl, ExportDecl, ExportDefaultDecl,
    ExportDefaultExpr, ExportSpecifier, Expr, Function, Ident, ImportDecl, Module, ModuleDecl,
    ModuleExportName, ModuleItem, NamedExport, NewExpr, Pat, Stmt, TaggedTpl,
};
use swc_ecma_visit::{Visit, VisitWith};

use super::awaits::{AwaitSite, mark_awaits};
use super::parse::position_error;
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

/// Spaces of the same length in characters as `text[start..end]`, keeping its line
/// terminators (ECMAScript's four).
fn blank(text: &str, start: usize, end: usize) -> String {
    text[start..end]
        .chars()
        .map(|c| {
            if matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}') {
                c
            } else {
                ' '
            }
        })
        .collect()
}

/// The first byte of the token at or after `pos` in `body`, past whitespace and comments.
/// swc starts the span of the token after an HTML-like comment (`<!-- …` anywhere, `--> …`
/// at the start of a line: ECMAScript Annex B.1.1) at the comment, and an edit made there
/// would land before the comment, out of the code.
pub(super) fn token_start(body: &str, mut pos: usize) -> usize {
    loop {
        let Some(rest) = body.get(pos..) else {
            return pos;
        };
        // ECMAScript's white space includes U+FEFF, which Rust's does not.
        let code = rest.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{FEFF}');
        pos += rest.len() - code.len();
        if code.starts_with("<!--") || code.starts_with("-->") || code.starts_with("//") {
            pos += code
                .find(['\n', '\r', '\u{2028}', '\u{2029}'])
                .unwrap_or(code.len());
        } else if let Some(comment) = code.strip_prefix("/*")
            && let Some(end) = comment.find("*/")
        {
            pos += end + 4;
        } else {
            return pos;
        }
    }
}

/// Recognises the form of `module` (parsed from `body`) and plans the edits that make it
/// the body of an async function: `import type` and `export` keywords blanked, `export
/// default X` assigned where it stands and returned at the end, the last expression
/// statement returned (when nothing is exported), an `async function main()` never called
/// called, and every await marked.
///
/// # Errors
/// A [`SourceError`] for an `import` of values, an `export` a function body cannot hold, or
/// a program that only declares functions and calls none.
pub(super) fn plan_edits(body: &str, module: &Module) -> Result<Plan, SourceError> {
    let off = |pos: BytePos| (pos.0.saturating_sub(1)) as usize;
    let mut edits = Vec::new();
    let mut after_awaits = Vec::new();
    let mut call_default = false;
    let mut seen_default = false;
    for item in &module.body {
        let ModuleItem::ModuleDecl(decl) = item else {
            continue;
        };
        match decl {
            // `import …` and TypeScript's `import x = require("m")`: only types may be
            // imported, and they leave nothing.
            ModuleDecl::Import(ImportDecl {
                span, type_only, ..
            }) => import(&mut edits, body, off(span.lo), off(span.hi), *type_only)?,
            ModuleDecl::TsImportEquals(import_equals) => import(
                &mut edits,
                body,
                off(import_equals.span.lo),
                off(import_equals.span.hi),
                import_equals.is_type_only,
            )?,
            ModuleDecl::ExportDecl(_)
            | ModuleDecl::ExportDefaultExpr(_)
            | ModuleDecl::ExportDefaultDecl(_)
            | ModuleDecl::ExportNamed(NamedExport { src: None, .. }) => {
                let Some(mut export) = Export::of(decl) else {
                    return Err(position_error(
                        body,
                        off(decl.span().lo),
                        "`export { … as default }` is not available: write `export default value`"
                            .into(),
                    ));
                };
                // Types (interfaces, overloads) aside, one value is exported by default.
                let is_default = matches!(
                    decl,
                    ModuleDecl::ExportDefaultExpr(_) | ModuleDecl::ExportDefaultDecl(_)
                ) && !matches!(export.value, Exported::Nothing);
                if is_default && std::mem::replace(&mut seen_default, true) {
                    return Err(position_error(
                        body,
                        export.start,
                        "a module has one `export default`; this is a second".into(),
                    ));
                }
                // A named function or class the program calls itself (outside functions,
                // whose bodies run later if ever) is the program's business: it is not
                // called again when the program ends (that would run it twice).
                if let Exported::Declaration { name, .. } = &export.value
                    && module
                        .body
                        .iter()
                        .any(|other| !std::ptr::eq(other, item) && calls_at_top(other, name))
                {
                    export.value = Exported::Nothing;
                }
                edits.push(export.blanked(body));
                // `export default x` assigns the value where it stands, and the body
                // returns it at its end (`return DEFAULT;`, appended below).
                let default = &wrapper().default;
                match export.value {
                    Exported::Nothing => {}
                    Exported::Expression { start, end } => {
                        call_default = true;
                        // As a property's value, an anonymous function or class is named
                        // `default`, as a module's is.
                        edits.push(Edit {
                            start: token_start(body, start),
                            kind: EditKind::Insert(format!("{default}={{default:")),
                        });
                        // After the await marks: one may end where the value ends.
                        after_awaits.push(Edit {
                            start: end,
                            kind: EditKind::Insert("}.default;".to_owned()),
                        });
                    }
                    Exported::Declaration { name, end } => {
                        call_default = true;
                        after_awaits.push(Edit {
                            start: end,
                            kind: EditKind::Insert(format!(";{default}={name};")),
                        });
                    }
                }
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

    // The value of a last expression statement is the result, unless a value is exported.
    // Empty statements (`5;;`) leave the completion value as it was, as in JavaScript, and
    // so do TypeScript's declarations that leave no code (`5; type T = number`).
    let mut append = None;
    let last = module.body.iter().rev().find(|item| !leaves_no_code(item));
    match last {
        _ if call_default => append = Some(format!("return {};", wrapper().default)),
        Some(ModuleItem::Stmt(Stmt::Expr(e))) => {
            edits.push(Edit {
                start: token_start(body, off(e.expr.span().lo)),
                kind: EditKind::Insert(format!("{}=true;return ", wrapper().implicit)),
            });
        }
        _ => {
            // Functions declared, or bound to a name (`const main = async () => {…}`).
            let functions: Vec<&Ident> = module
                .body
                .iter()
                .flat_map(|item| {
                    let decl = match item {
                        ModuleItem::Stmt(Stmt::Decl(decl))
                        | ModuleItem::ModuleDecl(ModuleDecl::ExportDecl(ExportDecl {
                            decl, ..
                        })) => decl,
                        _ => return Vec::new(),
                    };
                    match decl {
                        Decl::Fn(f) => vec![&f.ident],
                        Decl::Var(v) => v
                            .decls
                            .iter()
                            .filter_map(|d| match (&d.name, d.init.as_deref()) {
                                (Pat::Ident(name), Some(Expr::Arrow(_) | Expr::Fn(_))) => {
                                    Some(&name.id)
                                }
                                _ => None,
                            })
                            .collect(),
                        _ => Vec::new(),
                    }
                })
                .collect();
            // `export { main }` names it without using it.
            let uses_anywhere = |name: &str| {
                module
                    .body
                    .iter()
                    .filter(|item| {
                        !matches!(item, ModuleItem::ModuleDecl(ModuleDecl::ExportNamed(_)))
                    })
                    .map(|item| uses(item, name))
                    .sum::<usize>()
            };
            if let Some(main) = functions.iter().find(|i| &*i.sym == "main")
                && uses_anywhere(&main.sym) <= 1
            {
                append = Some("return await main();".to_owned());
            } else if !functions.is_empty()
                && module.body.iter().all(is_declaration)
                && functions.iter().all(|f| uses_anywhere(&f.sym) <= 1)
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
    let awaits = mark_awaits(body, module, &mut edits)?;
    edits.append(&mut after_awaits);
    // Stable: at one position, inserts keep the order they were planned in.
    edits.sort_by_key(|e| e.start);
    Ok(Plan {
        edits,
        append,
        call_default,
        awaits,
    })
}

/// Whether `item` is nothing once TypeScript is stripped and exports are made statements:
/// an empty statement, a type, an interface, a `declare`d name (exported or not), an
/// `import type`, or an `export { … }`.
fn leaves_no_code(item: &ModuleItem) -> bool {
    match item {
        ModuleItem::Stmt(Stmt::Empty(_)) => true,
        ModuleItem::ModuleDecl(ModuleDecl::ExportNamed(_)) => true,
        ModuleItem::Stmt(Stmt::Decl(decl))
        | ModuleItem::ModuleDecl(ModuleDecl::ExportDecl(ExportDecl { decl, .. })) => match decl {
            Decl::TsInterface(_) | Decl::TsTypeAlias(_) => true,
            Decl::Var(v) => v.declare,
            Decl::Fn(f) => f.declare,
            Decl::Class(c) => c.declare,
            Decl::TsEnum(e) => e.declare,
            Decl::TsModule(m) => m.declare,
            Decl::Using(_) => false,
        },
        ModuleItem::ModuleDecl(ModuleDecl::Import(i)) => i.type_only,
        ModuleItem::ModuleDecl(ModuleDecl::TsImportEquals(i)) => i.is_type_only,
        _ => false,
    }
}

/// Why a program cannot use `what` (`import`, `import()`, `import.meta`).
pub(crate) fn import_not_available(what: &str) -> String {
    format!(
        "`{what}` is not available: a program runs alone, without modules; call tools through `tools.<name>(args)`"
    )
}

/// An `import` at `start..end`: blanked when it imports only types, or else refused.
fn import(
    edits: &mut Vec<Edit>,
    body: &str,
    start: usize,
    end: usize,
    type_only: bool,
) -> Result<(), SourceError> {
    if !type_only {
        return Err(position_error(body, start, import_not_available("import")));
    }
    edits.push(Edit {
        start,
        kind: EditKind::Replace {
            end,
            text: blank(body, start, end),
        },
    });
    Ok(())
}

/// Whether `item` only declares: nothing in it runs when the program does (a variable's
/// value is a function, a literal or nothing; `const r = await tools.x()` runs a call).
fn is_declaration(item: &ModuleItem) -> bool {
    let decl = match item {
        ModuleItem::Stmt(Stmt::Decl(decl))
        | ModuleItem::ModuleDecl(ModuleDecl::ExportDecl(ExportDecl { decl, .. })) => decl,
        ModuleItem::Stmt(Stmt::Empty(_)) => return true,
        ModuleItem::ModuleDecl(ModuleDecl::Import(i)) => return i.type_only,
        ModuleItem::ModuleDecl(ModuleDecl::TsImportEquals(i)) => return i.is_type_only,
        ModuleItem::ModuleDecl(ModuleDecl::ExportNamed(_)) => return true,
        _ => return false,
    };
    match decl {
        Decl::Var(v) => v.decls.iter().all(|d| {
            matches!(
                d.init.as_deref(),
                None | Some(Expr::Arrow(_) | Expr::Fn(_) | Expr::Lit(_))
            )
        }),
        // Its value is disposed of when the program ends: that runs.
        Decl::Using(_) => false,
        _ => true,
    }
}

/// A top-level `export` and what it exports: `export` or `export default` is the text
/// `start..end` (up to the declaration or expression), and [`Exported`] says what value the
/// program's result is.
struct Export {
    start: usize,
    end: usize,
    value: Exported,
}

/// The value an `export` makes the program's result.
enum Exported {
    /// None: `export const x = 1`, `export {}`, `export default interface I {}`, an
    /// overload's signature, or a function the program calls itself.
    Nothing,
    /// `export default <expr>`, or an anonymous `function` or `class`: the value is the
    /// text `start..end`, an expression once `export default` is gone.
    Expression { start: usize, end: usize },
    /// `export default function f() {}` or `class C {}`: the declaration stays (it binds
    /// `name`, as in a module) and ends at `end`.
    Declaration { name: String, end: usize },
}

impl Export {
    /// The edit that writes the `export` (or `export default`) keywords as spaces.
    fn blanked(&self, body: &str) -> Edit {
        Edit {
            start: self.start,
            kind: EditKind::Replace {
                end: self.end,
                text: blank(body, self.start, self.end),
            },
        }
    }

    /// The export `decl` is, or `None` for other module declarations and for an `export
    /// { … }` that exports a default (positions are byte offsets in the body the module was
    /// parsed from).
    fn of(decl: &ModuleDecl) -> Option<Export> {
        let off = |pos: BytePos| (pos.0.saturating_sub(1)) as usize;
        let (start, end, value) = match decl {
            ModuleDecl::ExportDecl(e) => (e.span.lo, e.decl.span().lo, Exported::Nothing),
            // `export {}` (a TypeScript file's way to be a module) and `export { a, b }`
            // export nothing a program's result needs: the whole statement goes. One that
            // exports a default is not one of these.
            ModuleDecl::ExportNamed(NamedExport {
                span,
                specifiers,
                src: None,
                ..
            }) => {
                let is_default = |name: &ModuleExportName| match name {
                    ModuleExportName::Ident(i) => &*i.sym == "default",
                    ModuleExportName::Str(s) => &*s.value == "default",
                };
                let exports_default = specifiers.iter().any(|s| match s {
                    ExportSpecifier::Named(n) => is_default(n.exported.as_ref().unwrap_or(&n.orig)),
                    _ => true,
                });
                if exports_default {
                    return None;
                }
                (span.lo, span.hi, Exported::Nothing)
            }
            ModuleDecl::ExportDefaultExpr(ExportDefaultExpr { span, expr }) => {
                let value = Exported::Expression {
                    start: off(expr.span().lo),
                    end: off(expr.span().hi),
                };
                (span.lo, expr.span().lo, value)
            }
            ModuleDecl::ExportDefaultDecl(ExportDefaultDecl { span, decl }) => {
                let name = match decl {
                    DefaultDecl::Class(c) => Some(c.ident.as_ref()),
                    // An overload's signature (no body) is a type.
                    DefaultDecl::Fn(f) if f.function.body.is_some() => Some(f.ident.as_ref()),
                    DefaultDecl::Fn(_) | DefaultDecl::TsInterfaceDecl(_) => None,
                };
                let value = match name {
                    None => Exported::Nothing,
                    Some(Some(name)) => Exported::Declaration {
                        name: name.sym.to_string(),
                        end: off(decl.span().hi),
                    },
                    Some(None) => Exported::Expression {
                        start: off(decl.span().lo),
                        end: off(decl.span().hi),
                    },
                };
                (span.lo, decl.span().lo, value)
            }
            _ => return None,
        };
        Some(Export {
            start: off(start),
            end: off(end),
            value,
        })
    }
}

/// The edits that make the top-level `export`s of `module` (parsed from `body`) statements,
/// for checking the program as the body of a function (`codemode check --tsc`): `export`
/// and `export default` before a declaration become spaces, `export {}` goes, and an
/// exported value is assigned to `value` (`value=x;`), which keeps it checked as written
/// (an assignment takes any expression, and the statements after it stay reachable). In
/// order of start.
pub(super) fn exports_as_statements(body: &str, module: &Module, value: &str) -> Vec<Edit> {
    let mut edits = Vec::new();
    for item in &module.body {
        let ModuleItem::ModuleDecl(decl) = item else {
            continue;
        };
        let Some(export) = Export::of(decl) else {
            continue;
        };
        edits.push(export.blanked(body));
        if let Exported::Expression { start, end } = export.value {
            edits.push(Edit {
                start: token_start(body, start),
                kind: EditKind::Insert(format!("{value}=")),
            });
            edits.push(Edit {
                start: end,
                kind: EditKind::Insert(";".to_owned()),
            });
        }
    }
    edits
}

/// Whether `item` calls (or constructs, or tags a template with) `name` in code that runs
/// as the program runs: outside the bodies of functions and methods, which run later if
/// ever (a class's static blocks and field initialisers count).
fn calls_at_top(item: &ModuleItem, name: &str) -> bool {
    struct Calls<'a> {
        name: &'a str,
        found: bool,
    }
    impl Calls<'_> {
        fn callee(&mut self, e: &Expr) {
            if let Expr::Ident(i) = e.unwrap_parens()
                && &*i.sym == self.name
            {
                self.found = true;
            }
        }
    }
    impl Visit for Calls<'_> {
        fn visit_call_expr(&mut self, c: &CallExpr) {
            if let Callee::Expr(e) = &c.callee {
                self.callee(e);
            }
            c.visit_children_with(self);
        }
        fn visit_new_expr(&mut self, n: &NewExpr) {
            self.callee(&n.callee);
            n.visit_children_with(self);
        }
        fn visit_tagged_tpl(&mut self, t: &TaggedTpl) {
            self.callee(&t.tag);
            t.visit_children_with(self);
        }
        fn visit_function(&mut self, _: &Function) {}
        fn visit_arrow_expr(&mut self, _: &ArrowExpr) {}
    }
    let mut calls = Calls { name, found: false };
    item.visit_with(&mut calls);
    calls.found
}

/// How many identifiers named `name` `item` holds (bindings and references alike).
fn uses(item: &ModuleItem, name: &str) -> usize {
    let mut counter = IdentCounter { name, count: 0 };
    item.visit_with(&mut counter);
    counter.count
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
    fn exports_are_checked_as_statements() {
        let statements = |source: &str| crate::program::body_for_check(source, "", "V", "").text;
        // An exported value is assigned, whatever its precedence and line breaks.
        assert_eq!(
            statements("export default 1 + 2"),
            "               V=1 + 2;"
        );
        assert_eq!(
            statements("export default\n() => 1"),
            "              \nV=() => 1;"
        );
        assert_eq!(statements("export\ndefault 1"), "      \n        V=1;");
        assert_eq!(
            statements("export default\u{2028}1"),
            "              \u{2028}V=1;"
        );
        assert_eq!(
            statements("export default function () {}\n(0)"),
            "               V=function () {};\n(0)"
        );
        assert_eq!(statements("export {}\nlet a = 1"), "         \nlet a = 1");
        // Before a declaration, spaces: the declaration stays.
        assert_eq!(
            statements("export default function f() {} f()"),
            "               function f() {} f()"
        );
        assert_eq!(statements("export const a = 1"), "       const a = 1");
        assert_eq!(
            statements("export default interface I {}"),
            "               interface I {}"
        );
        // Positions map back past the wrapper and the insertions.
        let checked = crate::program::body_for_check("export default 1 + 2; x.y", "P: ", "V", "");
        let column = checked.text.find("x.y").unwrap() as u32 + 1;
        assert_eq!(checked.original_position(1, column), (1, 23));
        assert_eq!(checked.original_position(1, 2), (1, 1));
    }

    #[test]
    fn uncalled_main_is_called() {
        for main in [
            "async function main() { return 5 }",
            "const main = async () => { return 5 }",
            "export const main = async function () { return 5 }",
        ] {
            let p = prepare(main).unwrap();
            assert!(p.code.contains("return await main();"), "{main}");
        }
        for helper in ["function helper() { return 5 }", "const helper = () => 5"] {
            let e = prepare(helper).unwrap_err();
            assert!(e.message.contains("never calls"), "{}", e.message);
        }
        // A declaration whose value runs something (a call) is not only a declaration.
        let p = prepare("const r = await tools.x({}); function f() { return r }").unwrap();
        assert!(!p.code.contains("return await"), "{}", p.code);
    }
}
