//! TypeScript stripping: types become spaces (`swc_ts_fast_strip`, strip-only mode), so the
//! JavaScript keeps the program's lines and columns. Constructs that need compiling
//! (`enum`, `namespace`, constructor parameter properties) are refused with what to write
//! instead.

use std::sync::{Arc, Mutex, PoisonError};

use swc_common::errors::{DiagnosticBuilder, Emitter, Handler};
use swc_common::sync::Lrc;
use swc_common::{GLOBALS, Globals, SourceMap, Span};
use swc_ecma_parser::{Syntax, TsSyntax};

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

/// Says which TypeScript construct strip-only mode refused and what to write instead.
fn explain_strip_error(message: &str) -> String {
    let lower = message.to_ascii_lowercase();
    if lower.contains("enum") {
        format!(
            "TypeScript `enum` is not supported (types are only stripped, not compiled); use a union of string literals or a plain object instead. [{message}]"
        )
    } else if lower.contains("namespace") || lower.contains("module") {
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
    use crate::program::prepare;

    #[test]
    fn enum_is_refused_with_its_position() {
        let e = prepare("const a = 1;\nenum Color { Red }\n").unwrap_err();
        assert!(e.message.contains("enum"), "{}", e.message);
        assert_eq!(e.line, Some(2));
    }
}
