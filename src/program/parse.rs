//! Parsing with swc: the syntax tree of a program, its syntax errors with positions in the
//! model's text, and the thread whose stack is sized for deep nesting.

use swc_common::{BytePos, Span, Spanned};
use swc_ecma_ast::{Decl, Module, ModuleItem, Stmt};
use swc_ecma_parser::error::SyntaxError;
use swc_ecma_parser::{EsSyntax, Parser, StringInput, Syntax, TsSyntax};
use swc_ecma_visit::{VisitMut, VisitMutWith};

use super::fences::without_hashbang;
use super::positions::line_col;
use super::{SourceError, SourceErrorKind};

/// Programs up to this many bytes are parsed on the caller's stack (at most
/// [`STACK_PER_BYTE`] × 512 = 2 MiB of it, which every thread has).
const INLINE_PARSE_BYTES: usize = 512;

/// Stack the parser, the type stripper and the syntax tree's drop may need per byte of
/// program text: each nesting level takes at least one byte and, for the deepest
/// constructs measured (`[[[…`, `- - -…`, `a ? b : a ? …`), under 2 KiB of stack.
const STACK_PER_BYTE: usize = if cfg!(debug_assertions) {
    16 << 10
} else {
    4 << 10
};

/// Runs `f` (which parses a program of `len` bytes, works on its syntax tree and drops it)
/// where its recursion cannot overflow the stack: inline for small programs, else on a
/// thread whose stack is sized for the worst nesting `len` bytes can hold. Only the pages
/// the parse touches are ever resident.
///
/// # Errors
/// A `LimitError` when no such thread can be started, an `InternalError` when the parse
/// panicked (swc asserts things of the text in builds with debug assertions, and a fuzzer
/// found text that fails one).
pub(crate) fn with_parse_stack<R: Send>(
    len: usize,
    f: impl FnOnce() -> R + Send,
) -> Result<R, SourceError> {
    if len <= INLINE_PARSE_BYTES {
        return std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
            .map_err(|_| parser_failed());
    }
    let stack = len.saturating_mul(STACK_PER_BYTE).saturating_add(1 << 20);
    std::thread::scope(|scope| {
        let parser = std::thread::Builder::new()
            .name("codemode-parse".into())
            .stack_size(stack)
            .spawn_scoped(scope, f)
            .map_err(|e| SourceError {
                kind: SourceErrorKind::Limit,
                message: format!(
                    "the program ({len} bytes) is too large to parse: no stack of {} MiB for it ({e})",
                    stack >> 20
                ),
                line: None,
                column: None,
            })?;
        parser.join().map_err(|_| parser_failed())
    })
}

/// The error of a parse that panicked.
fn parser_failed() -> SourceError {
    SourceError {
        kind: SourceErrorKind::Internal,
        message: "the parser failed on this program (a defect of the parser, not of the program as such); check its syntax".into(),
        line: None,
        column: None,
    }
}

/// A `SyntaxError` at byte `offset` of `text` (1-based line and character column).
pub(super) fn position_error(text: &str, offset: usize, message: String) -> SourceError {
    let (line, col) = line_col(text, offset.min(text.len()));
    SourceError {
        kind: SourceErrorKind::Syntax,
        message,
        line: Some(line + 1),
        column: Some(col + 1),
    }
}

/// TypeScript without JSX and without decorators (the engine has none).
pub(super) fn ts_syntax() -> Syntax {
    Syntax::Typescript(TsSyntax {
        tsx: false,
        // The engine has no decorators: refused here, with their position, in run and check.
        decorators: false,
        ..Default::default()
    })
}

/// A program's syntax tree and the mode it parsed in, which is the mode it runs in.
pub(crate) struct Parsed {
    /// The program's statements as a module's items (spans start at byte 1 of the body).
    pub(crate) module: Module,
    /// Whether the program parsed only as a module (it has `export`, `import type`, or a
    /// TypeScript declaration a function body cannot hold): it then runs in strict mode, as
    /// a module does. Otherwise it parsed as the body of a sloppy async function, which is
    /// how the engine runs it.
    pub(crate) strict: bool,
}

/// The syntax errors TypeScript adds to JavaScript's sloppy grammar: `with` (TS2410) and
/// legacy octal literals (TS1085).
fn typescript_only(kind: &SyntaxError) -> bool {
    matches!(kind, SyntaxError::TS2410 | SyntaxError::TS1085)
}

/// The syntax tree of `body` (spans start at byte 1), parsed the way the engine runs it:
/// as the body of an `async function` in a sloppy script (ECMAScript §15.8, with Annex B:
/// `with`, legacy octal literals, `let`, `yield` and `await` as names where a function body
/// allows them), so a top-level `return` and `await` are allowed.
///
/// The syntax is TypeScript's, except for a program that uses `with` or a legacy octal
/// literal, which TypeScript refuses: such a program is JavaScript, parsed as JavaScript
/// (TypeScript syntax in it is then an error). A body that does not parse as a function
/// body but parses as a TypeScript module (it has `export` or `import type`) is a module:
/// strict, as ECMAScript §11.2.2 makes every module.
///
/// # Errors
/// The first syntax error, positioned in `body`; a decorator is refused where it is. When
/// neither parse succeeds, the error of the parse that read further, except that an error
/// in the function's closing (a stray `}` in the body) or on `import`/`export` is reported
/// as the module parse reports it.
pub(super) fn parse(body: &str) -> Result<Parsed, SourceError> {
    let body = &*without_hashbang(body);
    let as_function = match parse_in_async_function(body, ts_syntax()) {
        Ok((module, None)) => {
            return Ok(Parsed {
                module,
                strict: false,
            });
        }
        Ok((_, Some((at, message)))) => {
            return match parse_in_async_function(body, Syntax::Es(EsSyntax::default())) {
                Ok((module, _)) => Ok(Parsed {
                    module,
                    strict: false,
                }),
                Err(_) => Err(position_error(
                    body,
                    at,
                    format!(
                        "{message} (TypeScript refuses it: a program that uses it must be JavaScript, without types)"
                    ),
                )),
            };
        }
        Err(e) => e,
    };
    let start = BytePos(1);
    let input = StringInput::new(body, start, BytePos(1 + body.len() as u32));
    let mut parser = Parser::new(ts_syntax(), input, None);
    let offset = |span: Span| (span.lo.0.saturating_sub(start.0)) as usize;
    let module = parser.parse_module();
    let errors: Vec<_> = parser
        .take_errors()
        .into_iter()
        .filter(|e| !matches!(e.kind(), SyntaxError::ReturnNotAllowed))
        .collect();
    let first = match (module, errors.into_iter().next()) {
        (Ok(module), None) => {
            return Ok(Parsed {
                module,
                strict: true,
            });
        }
        (Err(e), _) | (Ok(_), Some(e)) => e,
    };
    let (at, mut message) = match as_function {
        // The function parse read further, inside the body: its error is the program's.
        Some((at, message)) if at > offset(first.span()) => (at, message),
        _ => (offset(first.span()), first.kind().msg().into_owned()),
    };
    if matches!(first.kind(), SyntaxError::InvalidIdentInAsync)
        && at == offset(first.span())
        && has_await_before_a_line_break(body)
    {
        message.push_str(
            " (an `await` followed by a line break at the top level of a program with `export` or `import` is read as a name: put what it awaits on the same line)",
        );
    }
    if body.get(at..).is_some_and(|rest| rest.starts_with('@')) {
        message = "decorators (`@…`) are not supported: the engine has none".to_owned();
    }
    Err(position_error(body, at, message))
}

/// Whether `body` has an `await` followed, on its line, only by blanks or a comment: the
/// case swc misreads at a module's top level.
fn has_await_before_a_line_break(body: &str) -> bool {
    let is_name = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    body.match_indices("await").any(|(at, word)| {
        let before = body[..at].chars().next_back();
        let rest = body[at + word.len()..].trim_start_matches([' ', '\t']);
        !before.is_some_and(is_name)
            && (rest.starts_with(['\n', '\r', '\u{2028}', '\u{2029}'])
                || rest.starts_with("//")
                || rest.starts_with("/*"))
    })
}

/// A syntax error's byte offset in the body and its message.
type At = (usize, String);

/// The body parsed as the inside of an async function in a sloppy script, as the engine
/// runs it, with `syntax`; its statements taken as a module's (spans as in `body`), with
/// the first [`typescript_only`] error when there were such errors and no other.
///
/// # Errors
/// The first syntax error as (byte offset in `body`, message), or `None` when the body
/// closes the function early (a stray `}`) or the error is on `import` or `export`: errors
/// the module parse positions better.
fn parse_in_async_function(body: &str, syntax: Syntax) -> Result<(Module, Option<At>), Option<At>> {
    const OPEN: &str = "async function __codemode_body() {";
    let text = format!("{OPEN}{body}\n}}");
    let input = StringInput::new(&text, BytePos(1), BytePos(1 + text.len() as u32));
    let mut parser = Parser::new(syntax, input, None);
    let in_body = |span: Span| {
        (span.lo.0 as usize)
            .checked_sub(1 + OPEN.len())
            .filter(|&at| at < body.len())
    };
    let script = parser.parse_script();
    let (refused, errors): (Vec<_>, Vec<_>) = parser
        .take_errors()
        .into_iter()
        .partition(|e| typescript_only(e.kind()));
    let error = match (script, errors.into_iter().next()) {
        (Ok(script), None) => {
            let mut body_stmts = script.body;
            let Some(Stmt::Decl(Decl::Fn(f))) = body_stmts.pop() else {
                return Err(None);
            };
            if !body_stmts.is_empty() || &*f.ident.sym != "__codemode_body" {
                return Err(None);
            }
            let Some(function_body) = f.function.body else {
                return Err(None);
            };
            let mut module = Module {
                span: script.span,
                body: function_body
                    .stmts
                    .into_iter()
                    .map(ModuleItem::Stmt)
                    .collect(),
                shebang: None,
            };
            module.visit_mut_with(&mut ShiftSpans(OPEN.len() as u32));
            let refused = refused
                .first()
                .and_then(|e| in_body(e.span()).map(|at| (at, e.kind().msg().into_owned())));
            return Ok((module, refused));
        }
        (Err(e), _) | (Ok(_), Some(e)) => e,
    };
    match in_body(error.span()) {
        // `import` and `export` are module syntax: the module parse reports on them.
        Some(at) if !matches!(error.kind(), SyntaxError::ImportExportInScript) => {
            Err(Some((at, error.kind().msg().into_owned())))
        }
        _ => Err(None),
    }
}

/// Moves every span `by` bytes back.
struct ShiftSpans(u32);

impl VisitMut for ShiftSpans {
    fn visit_mut_span(&mut self, span: &mut Span) {
        if !span.is_dummy() {
            span.lo = BytePos(span.lo.0.saturating_sub(self.0).max(1));
            span.hi = BytePos(span.hi.0.saturating_sub(self.0).max(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::program::prepare;

    #[test]
    fn await_followed_by_a_line_break_parses_at_the_top_level() {
        // swc refuses it in a module; the body is parsed again inside an async function.
        let p = prepare("const a = 1;\nconst r = await\n  f(a);\nr").unwrap();
        assert!(p.code.contains("return r"), "{}", p.code);
        assert_eq!(p.awaits.len(), 1);
        assert_eq!((p.awaits[0].line, p.awaits[0].column), (2, 11));
        assert_eq!(p.awaits[0].text, "f(a)");
        // Errors keep their positions in the model's source.
        let e = prepare("const r = await\n  f();\nconst x = ;").unwrap_err();
        assert_eq!((e.line, e.column), (Some(3), Some(11)));
        // Inside brackets, calls and templates too (swc then fails with another error).
        for body in [
            "const s = (await\n  f()).x;\ns",
            "const a = [await\n  f()];\na",
            "g(await // why not\n  f());",
            "const t = `${await\n  f()}`;\nt",
        ] {
            let p = prepare(body).unwrap_or_else(|e| panic!("{body}: {e:?}"));
            assert_eq!(p.awaits.len(), 1, "{body}");
        }
        // With `export`, a clear way out.
        let e = prepare("const r = await\n  f();\nexport default r").unwrap_err();
        assert!(
            e.message.contains("put what it awaits on the same line"),
            "{e:?}"
        );
        // `await` as a name stays an error.
        let e = prepare("const await = 1;").unwrap_err();
        assert_eq!(e.kind.name(), "SyntaxError");
        assert_eq!((e.line, e.column), (Some(1), Some(7)));
    }

    #[test]
    fn a_hashbang_line_is_a_comment() {
        let p = prepare("#!/usr/bin/env codemode\nreturn 1").unwrap();
        assert!(p.code.contains("///usr/bin/env codemode\n"), "{}", p.code);
        let e = prepare("#!/usr/bin/env codemode\nreturn )").unwrap_err();
        assert_eq!((e.line, e.column), (Some(2), Some(8)));
    }

    #[test]
    fn decorators_are_refused_where_they_are() {
        let e = prepare("const a = 1;\n@dec class C {}\nreturn 1").unwrap_err();
        assert_eq!(
            (e.kind.name(), e.message.as_str(), e.line, e.column),
            (
                "SyntaxError",
                "decorators (`@…`) are not supported: the engine has none",
                Some(2),
                Some(1)
            )
        );
    }

    /// Found by the `program_text` fuzz target: text that fails one of swc's own debug
    /// assertions (`parse_args_or_pats`, one item before `=>`) where those are compiled in.
    #[test]
    fn text_that_trips_the_parsers_own_assertion_is_an_error_not_a_panic() {
        let text = "(((((((s, new Promiseretur => setTimeout(r, ber = 5;\nreturn )10))]))))";
        let Err(e) = crate::program::prepare(text) else {
            panic!("it must not parse")
        };
        let expected = if cfg!(debug_assertions) {
            "InternalError"
        } else {
            "SyntaxError"
        };
        assert_eq!(e.kind.name(), expected, "{}", e.message);
        // Through the same path as a program too large to parse inline.
        let padded = format!("{text}{}", " ".repeat(super::INLINE_PARSE_BYTES));
        let Err(e) = crate::program::prepare(&padded) else {
            panic!("it must not parse")
        };
        assert_eq!(e.kind.name(), expected, "{}", e.message);
    }

    #[test]
    fn syntax_error_has_the_models_position() {
        let e = prepare("const a = 1;\nconst b = ;\n").unwrap_err();
        assert_eq!((e.line, e.column), (Some(2), Some(11)));
    }
}
