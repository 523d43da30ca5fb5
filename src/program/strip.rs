//! TypeScript stripping: types become spaces (`swc_ts_fast_strip`, strip-only mode), so the
//! JavaScript keeps the program's lines and columns. Constructs that need compiling
//! (`enum`, `namespace`, constructor parameter properties) are refused with what to write
//! instead.

use std::sync::{Arc, Mutex, PoisonError};

use swc_common::errors::{DiagnosticBuilder, Emitter, Handler};
use swc_common::sync::Lrc;
use swc_common::{GLOBALS, Globals, SourceMap, Span};
use swc_ecma_ast::{self as ast, Module};
use swc_ecma_parser::{Syntax, TsSyntax};
use swc_ecma_visit::{Visit, VisitWith};

use super::parse::ts_syntax;
use super::{SourceError, SourceErrorKind};

/// A diagnostic's message and primary span.
type Diagnostic = (String, Option<Span>);

/// Collects the diagnostics swc emits while stripping.
#[derive(Clone, Default)]
struct Diagnostics(Arc<Mutex<Vec<Diagnostic>>>);

impl Emitter for Diagnostics {
    fn emit(&mut self, db: &mut DiagnosticBuilder<'_>) {
        let mut message = db.message();
        for child in &db.children {
            let note = child.message();
            if !note.is_empty() {
                message.push_str(" (");
                message.push_str(&note);
                message.push(')');
            }
        }
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((message, db.span.primary_span()));
    }
}

thread_local! {
    /// swc's globals, made once per thread.
    static SWC_GLOBALS: Globals = Globals::new();
}

/// Strips TypeScript syntax (strip-only: positions stay).
///
/// # Errors
/// A `SyntaxError` positioned in `code` (1-based line and character column) for what
/// strip-only mode cannot remove, with what to write instead.
pub(super) fn strip_types(code: String) -> Result<String, SourceError> {
    let diagnostics = Diagnostics::default();
    let handler = Handler::with_emitter(true, false, Box::new(diagnostics.clone()));
    let cm: Lrc<SourceMap> = Default::default();
    let result = SWC_GLOBALS.with(|globals| {
        GLOBALS.set(globals, || {
            swc_ts_fast_strip::operate(
                &cm,
                &handler,
                code,
                swc_ts_fast_strip::Options {
                    module: Some(false),
                    filename: Some("program.ts".into()),
                    parser: match ts_syntax() {
                        Syntax::Typescript(t) => t,
                        _ => TsSyntax::default(),
                    },
                    mode: swc_ts_fast_strip::Mode::StripOnly,
                    ..Default::default()
                },
            )
        })
    });
    match result {
        Ok(out) => Ok(out.code),
        Err(err) => {
            let diags = diagnostics.0.lock().unwrap_or_else(PoisonError::into_inner);
            let Some((message, span)) = diags.first().cloned() else {
                return Err(SourceError {
                    kind: SourceErrorKind::Syntax,
                    message: err.message,
                    line: None,
                    column: None,
                });
            };
            let message = explain_strip_error(&message);
            match span {
                Some(span) if !span.is_dummy() => {
                    let loc = cm.lookup_char_pos(span.lo);
                    Err(SourceError {
                        kind: SourceErrorKind::Syntax,
                        message,
                        line: Some(loc.line as u32),
                        column: Some(loc.col_display as u32 + 1),
                    })
                }
                _ => Err(SourceError {
                    kind: SourceErrorKind::Syntax,
                    message,
                    line: None,
                    column: None,
                }),
            }
        }
    }
}

/// Whether `module` (a program parsed with TypeScript's syntax) holds anything that only
/// TypeScript has, so that stripping could change its text. A program without any (most
/// programs a model writes, `return 1` among them) skips the strip, which parses the whole
/// text a second time.
///
/// Conservative by construction: every TypeScript node reached from JavaScript syntax (a
/// type annotation, type parameters or arguments, `as`, `satisfies`, `!`, `<T>x`, the
/// TypeScript declarations and module forms, parameter properties, index signatures,
/// `implements`) counts, and so does every TypeScript flag on a JavaScript node (an
/// accessibility, `abstract`, `override`, `readonly`, `declare`, `?` and `!` on names and
/// members, `type` on imports and exports) and a function or constructor without a body
/// (an overload). A test checks the answer against the stripper's own output.
pub(super) fn has_type_syntax(module: &Module) -> bool {
    let mut found = TypeSyntax(false);
    module.visit_with(&mut found);
    found.0
}

/// The visitor of [`has_type_syntax`]: true once anything TypeScript-only was met.
struct TypeSyntax(bool);

/// A visit method that records a TypeScript node and does not look inside it.
macro_rules! typescript_nodes {
    ($($method:ident: $node:ty),* $(,)?) => {
        $(fn $method(&mut self, _: &$node) {
            self.0 = true;
        })*
    };
}

/// A visit method that records a TypeScript flag of a JavaScript node, then looks inside.
macro_rules! typescript_flags {
    ($($method:ident: $node:ty => |$n:ident| $flag:expr),* $(,)?) => {
        $(fn $method(&mut self, $n: &$node) {
            self.0 |= $flag;
            $n.visit_children_with(self);
        })*
    };
}

impl Visit for TypeSyntax {
    typescript_nodes! {
        visit_ts_type_ann: ast::TsTypeAnn,
        visit_ts_type_param_decl: ast::TsTypeParamDecl,
        visit_ts_type_param_instantiation: ast::TsTypeParamInstantiation,
        visit_ts_expr_with_type_args: ast::TsExprWithTypeArgs,
        visit_ts_as_expr: ast::TsAsExpr,
        visit_ts_const_assertion: ast::TsConstAssertion,
        visit_ts_non_null_expr: ast::TsNonNullExpr,
        visit_ts_satisfies_expr: ast::TsSatisfiesExpr,
        visit_ts_type_assertion: ast::TsTypeAssertion,
        visit_ts_instantiation: ast::TsInstantiation,
        visit_ts_interface_decl: ast::TsInterfaceDecl,
        visit_ts_type_alias_decl: ast::TsTypeAliasDecl,
        visit_ts_enum_decl: ast::TsEnumDecl,
        visit_ts_module_decl: ast::TsModuleDecl,
        visit_ts_import_equals_decl: ast::TsImportEqualsDecl,
        visit_ts_export_assignment: ast::TsExportAssignment,
        visit_ts_namespace_export_decl: ast::TsNamespaceExportDecl,
        visit_ts_param_prop: ast::TsParamProp,
        visit_ts_index_signature: ast::TsIndexSignature,
        visit_accessibility: ast::Accessibility,
    }

    fn visit_ident(&mut self, n: &ast::Ident) {
        self.0 |= n.optional;
    }

    typescript_flags! {
        visit_array_pat: ast::ArrayPat => |n| n.optional,
        visit_object_pat: ast::ObjectPat => |n| n.optional,
        visit_var_decl: ast::VarDecl => |n| n.declare,
        visit_var_declarator: ast::VarDeclarator => |n| n.definite,
        visit_fn_decl: ast::FnDecl => |n| n.declare,
        visit_class_decl: ast::ClassDecl => |n| n.declare,
        visit_function: ast::Function => |n| n.body.is_none(),
        visit_class: ast::Class => |n| n.is_abstract,
        visit_constructor: ast::Constructor => |n| n.is_optional || n.body.is_none(),
        visit_class_prop: ast::ClassProp => |n| n.is_abstract || n.is_optional || n.is_override || n.readonly || n.declare || n.definite,
        visit_private_prop: ast::PrivateProp => |n| n.is_optional || n.is_override || n.readonly || n.definite,
        visit_class_method: ast::ClassMethod => |n| n.is_abstract || n.is_optional || n.is_override,
        visit_private_method: ast::PrivateMethod => |n| n.is_abstract || n.is_optional || n.is_override,
        visit_auto_accessor: ast::AutoAccessor => |n| n.is_abstract || n.is_override || n.definite,
        visit_import_decl: ast::ImportDecl => |n| n.type_only,
        visit_import_named_specifier: ast::ImportNamedSpecifier => |n| n.is_type_only,
        visit_named_export: ast::NamedExport => |n| n.type_only,
        visit_export_named_specifier: ast::ExportNamedSpecifier => |n| n.is_type_only,
        visit_export_all: ast::ExportAll => |n| n.type_only,
    }
}

/// Says which TypeScript construct strip-only mode refused and what to write instead.
fn explain_strip_error(message: &str) -> String {
    let lower = message.to_ascii_lowercase();
    if lower.contains("enum") {
        format!(
            "TypeScript `enum` is not supported (types are only stripped, not compiled); use a union of string literals or a plain object instead. [{message}]"
        )
    } else if lower.contains("namespace") || lower.contains("`module` keyword") {
        format!(
            "TypeScript `namespace` is not supported (types are only stripped, not compiled); use plain objects or functions instead. [{message}]"
        )
    } else if lower.contains("parameter propert") {
        format!(
            "TypeScript constructor parameter properties are not supported; assign the fields in the constructor body. [{message}]"
        )
    } else {
        message.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::{has_type_syntax, strip_types};
    use crate::program::parse::{parse, with_parse_stack};
    use crate::program::prepare;

    /// Whether stripping changes `body` (or refuses it), as the body of a function.
    fn strip_changes(body: &str) -> bool {
        let text = format!("async function f() {{\n{body}\n}}");
        strip_types(text.clone()).map_or(true, |out| out != text)
    }

    /// The detector agrees with the stripper on every TypeScript construct and on
    /// JavaScript that looks like one (`a < b > (c)` is a call with a type argument in
    /// TypeScript, so both see types there).
    #[test]
    fn type_syntax_is_found_exactly_where_stripping_changes_the_text() {
        let typescript = [
            "let x: number = 1;",
            "function f<T>(a: T) { return a }",
            "const y = x as any;",
            "const z = x!;",
            "x!.y = 1;",
            "const w = <any>x;",
            "const s = x satisfies number;",
            "const c = [1] as const;",
            "interface I { a: string }",
            "type T = string;",
            "enum E { A }",
            "namespace N { export const a = 1 }",
            "class A { private x = 1 }",
            "class A { x?: number }",
            "class A { x!: number }",
            "class A { readonly x = 1 }",
            "class A { declare x: number }",
            "class A { #p?: number }",
            "abstract class A { abstract m(): void }",
            "class A extends B { override m() {} }",
            "class A implements I {}",
            "class A { [k: string]: any }",
            "class A { constructor(private x: number) {} }",
            "class A { m?() {} }",
            "class A { constructor(); constructor(a) {} }",
            "function f(a?) {}",
            "function f({ a }?) {}",
            "function f([a]?) {}",
            "function f(this: Window) {}",
            "function f(): void;\nfunction f() {}",
            "declare const x: number;",
            "declare function f(): void;",
            "declare class C {}",
            "let v!: number;",
            "f<string>('a');",
            "new Map<string, number>();",
            "const g = f<string>;",
            "const a = b < c > (d);",
            "const h = async <T,>(x: T) => x;",
            "const o = { get a(): number { return 1 } };",
            "for (const k of ks as string[]) {}",
        ];
        let javascript = [
            "return 1",
            "const a = b < c; const d = e > f;",
            "if (a !== b && !c) { x = y ? z : w }",
            "const f = (a, b = 1, ...c) => a ?? b?.c ?? c?.[0];",
            "class A extends B { static #n = 1; #p; get x() { return this.#p } set x(v) {} static { A.y = 1 } async *g() { yield* [] } }",
            "const { a = 1, b: [c, ...d], ...e } = o;",
            "label: for (let i = 0; i < 3; i++) { if (i) continue label; }",
            "const r = /a<b>c/g.test(`x${y}z`); const t = tag`q`;",
            "async function* g() { for await (const x of xs) yield x; }",
            "const o = { a, 'b': 2, [c]: 3, m() {}, get g() { return 1 }, async *h() {} };",
            "try { throw new Error('x') } catch { } finally { }",
            "let x = a ? (b) : c => d;",
        ];
        for (bodies, typed) in [(&typescript[..], true), (&javascript[..], false)] {
            for body in bodies {
                let parsed = parse(body).unwrap_or_else(|e| panic!("{body}: {}", e.message));
                assert_eq!(has_type_syntax(&parsed.module), typed, "detector on {body}");
                assert_eq!(strip_changes(body), typed, "stripper on {body}");
            }
        }
        // The repository's own TypeScript programs (examples and test programs) that run as
        // function bodies.
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut checked = 0;
        for dir in [
            "examples",
            "tests/programs/hostile",
            "tests/programs/typecheck",
        ] {
            for entry in std::fs::read_dir(root.join(dir)).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_none_or(|e| e != "ts") {
                    continue;
                }
                let body = std::fs::read_to_string(&path).unwrap();
                // On a stack sized for the program, as `prepare` parses (one is deeply nested).
                let agree = with_parse_stack(body.len() + 1024, || {
                    let parsed = parse(&body).ok().filter(|p| !p.strict)?;
                    Some(has_type_syntax(&parsed.module) == strip_changes(&body))
                })
                .unwrap();
                let Some(agree) = agree else { continue };
                assert!(agree, "{}", path.display());
                checked += 1;
            }
        }
        assert!(checked >= 10, "{checked} programs checked");
        // Forms only a module has: found, whether or not the function-body strip reads them.
        for body in [
            "import type { X } from 'x';\nreturn 1",
            "import { type X } from 'x';\nreturn 1",
            "export type { X };",
            "export { type X };",
            "export type * from 'x';",
        ] {
            let parsed = parse(body).unwrap_or_else(|e| panic!("{body}: {}", e.message));
            assert!(has_type_syntax(&parsed.module), "types missed in {body}");
        }
    }

    /// Only the stripper's own refusals are explained as `namespace`: a syntax error that
    /// merely mentions modules keeps its message.
    #[test]
    fn namespace_explanations_are_for_namespaces_only() {
        for program in [
            "namespace N { export const a = 1 }",
            "module M { export const a = 1 }",
        ] {
            let e = prepare(program).unwrap_err();
            assert!(
                e.message
                    .starts_with("TypeScript `namespace` is not supported"),
                "{program}: {}",
                e.message
            );
        }
        let e = prepare("let x: number = 1;\nreturn import.meta").unwrap_err();
        assert!(!e.message.contains("namespace"), "{}", e.message);
        assert!(e.message.contains("import.meta"), "{}", e.message);
        assert_eq!(e.line, Some(2));
    }

    #[test]
    fn enum_is_refused_with_its_position() {
        let e = prepare("const a = 1;\nenum Color { Red }\n").unwrap_err();
        assert!(e.message.contains("enum"), "{}", e.message);
        assert_eq!(e.line, Some(2));
    }
}
