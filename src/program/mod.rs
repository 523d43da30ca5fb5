//! Program text: from the text a model wrote to the JavaScript the engine runs.
//!
//! This module knows swc, not the engine: the sandbox evaluates the [`Program`] it makes,
//! and `codemode check` reads the same syntax tree. The steps, in order:
//!
//! 1. [`fences`]: markdown fences are removed (the first fenced block is the program;
//!    prose around it is ignored), and a leading `#!` line becomes a comment.
//! 2. [`parse`](mod@parse): the program is parsed with swc (TypeScript syntax) the way the
//!    engine runs it, as the body of an `async function` in sloppy mode; a program that
//!    parses only as a module (`export`, `import type`) is a module and runs strict, its
//!    function opening with `'use strict';`. Syntax errors have line and column (the parse
//!    runs on a thread with a stack sized for the text).
//! 3. [`forms`]: its form is recognised and planned as edits that keep positions: a body
//!    with top-level `return` and `await`, a last expression statement (its value is the
//!    result), `export default <expr>` (called when it is a function), an
//!    `async function main()` never called (it is called); [`awaits`] numbers every `await`
//!    so a run can say where the program waits.
//! 4. The edited body is put inside the [`wrapper`](mod@wrapper)
//!    (`0,async function program(STATE) {` … `}`, opening on a line of its own).
//! 5. [`strip`]: TypeScript syntax is stripped with `swc_ts_fast_strip` (types become
//!    spaces, so lines and columns are kept), and a NUL is written as its escape (the
//!    engine takes its source as a C string).
//!
//! Every insertion is recorded so that positions the engine reports map back to the
//! model's own source ([`Program::original_position`], in [`positions`]).

mod awaits;
mod fences;
mod forms;
mod parse;
mod positions;
mod strip;
mod wrapper;

use swc_ecma_ast::Module;

pub(crate) use self::awaits::AwaitSite;
pub(crate) use self::fences::unfence;
use self::fences::without_hashbang;
pub(crate) use self::forms::import_not_available;
use self::forms::{EditKind, plan_edits};
use self::parse::parse;
pub(crate) use self::parse::with_parse_stack;
pub(crate) use self::positions::LineIndex;
use self::positions::PositionMap;
use self::strip::{has_type_syntax, strip_types};
use self::wrapper::wrapper;
pub(crate) use self::wrapper::{AWAIT_KEY, EXPORTED_KEY, IMPLICIT_KEY};

/// A program ready to evaluate.
#[derive(Debug, Clone)]
pub(crate) struct Program {
    /// JavaScript whose completion value is the async function to call with the run's
    /// state object: no prototype, and own data properties [`AWAIT_KEY`] (0: the number of
    /// the await the program last reached), [`IMPLICIT_KEY`] (`false`: whether the
    /// program's result is the value of its last expression statement rather than a
    /// `return`) and [`EXPORTED_KEY`] (`undefined`: the `export default` value), which the
    /// program writes as it runs (see [`mod@wrapper`]).
    pub(crate) code: String,
    /// When the program has `export default <expr>`: a result that is the exported value
    /// is called when it is a function.
    pub(crate) call_default: bool,
    /// The program's awaits, numbered from 1 (see [`wrapper::Wrapper::mark`]).
    pub(crate) awaits: Vec<AwaitSite>,
    map: PositionMap,
}

/// A program that cannot run, with its position in the model's own source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourceError {
    /// What kind of problem it is.
    pub(crate) kind: SourceErrorKind,
    /// What is wrong and, where possible, what to write instead.
    pub(crate) message: String,
    /// 1-based line in the model's own source.
    pub(crate) line: Option<u32>,
    /// 1-based column (in characters) in the model's own source.
    pub(crate) column: Option<u32>,
}

/// Why a program text cannot run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SourceErrorKind {
    /// It does not parse, or uses a construct that cannot run here (`SyntaxError`).
    Syntax,
    /// It parses but does nothing when run: it only declares functions (`ProgramError`).
    Unrunnable,
    /// It is too large to parse (`LimitError`).
    Limit,
    /// The parser failed (`InternalError`).
    Internal,
}

impl SourceErrorKind {
    /// The error's name as the model reads it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            SourceErrorKind::Syntax => "SyntaxError",
            SourceErrorKind::Unrunnable => "ProgramError",
            SourceErrorKind::Limit => "LimitError",
            SourceErrorKind::Internal => "InternalError",
        }
    }
}

/// The directive that makes a module-form program's function strict.
const USE_STRICT: &str = "'use strict';";

/// Prepares `source` to run.
///
/// # Errors
/// A [`SourceError`] for a syntax error, a construct that cannot run (an `import`, a
/// TypeScript `enum` or `namespace`), or a program that only declares functions and calls
/// none.
pub(crate) fn prepare(source: &str) -> Result<Program, SourceError> {
    with_parse_stack(source.len(), || prepare_here(source))?
}

/// [`prepare`] on this thread's stack: for callers already inside [`with_parse_stack`].
pub(crate) fn prepare_here(source: &str) -> Result<Program, SourceError> {
    let (body, line_offset) = unfence(source);
    let body = &*without_hashbang(body);
    let mut map = PositionMap {
        prefix_lines: 1,
        prefix: 0,
        line_offset,
        insertions: Vec::new(),
    };
    let parsed = parse(body).map_err(|e| e.shifted(line_offset))?;
    let plan = plan_edits(body, &parsed.module).map_err(|e| e.shifted(line_offset))?;

    let wrap = wrapper();
    let mut edited = String::with_capacity(wrap.prefix.len() + body.len() + wrap.suffix.len() + 32);
    edited.push_str(&wrap.prefix);
    if parsed.strict {
        // A program that parsed only as a module runs as strict as it parsed: the
        // directive opens the program's function (before any of the model's text).
        map.insertions.push((0, 0, USE_STRICT.len() as u32));
        edited.push_str(USE_STRICT);
    }
    apply(body, &plan.edits, &mut map, &mut edited);
    if let Some(tail) = &plan.append {
        edited.push('\n');
        edited.push_str(tail);
    }
    edited.push_str(&wrap.suffix);

    // A program parsed as JavaScript (it uses `with` or a legacy octal literal) has no
    // TypeScript in its tree either.
    let stripped = if !has_type_syntax(&parsed.module) {
        Ok(edited)
    } else {
        strip_types(edited)
    };
    let code = stripped.map_err(|mut e| {
        if let (Some(l), Some(c)) = (e.line, e.column) {
            let (l, c) = map.original(l, c);
            e.line = Some(l);
            e.column = Some(c);
        }
        e
    })?;
    let awaits = plan
        .awaits
        .into_iter()
        .map(|a| AwaitSite {
            line: a.line + line_offset,
            ..a
        })
        .collect();
    // The engine takes its source as a C string: a NUL (legal in strings, templates and
    // comments) is written as the escape that means the same there.
    let code = if code.contains('\0') {
        code.replace('\0', "\\x00")
    } else {
        code
    };
    Ok(Program {
        code,
        call_default: plan.call_default,
        awaits,
        map,
    })
}

/// Writes `body` with `edits` (by start) applied to `out`, recording the insertions in
/// `map`.
fn apply(body: &str, edits: &[forms::Edit], map: &mut PositionMap, out: &mut String) {
    let mut last = 0usize;
    let lines = LineIndex::new(body);
    for edit in edits {
        out.push_str(&body[last..edit.start]);
        match &edit.kind {
            EditKind::Insert(text) => {
                let (line, col) = lines.line_col(body, edit.start);
                map.insertions
                    .push((line, col, text.chars().count() as u32));
                out.push_str(text);
                last = edit.start;
            }
            EditKind::Replace { end, text } => {
                out.push_str(text);
                last = *end;
            }
        }
    }
    out.push_str(&body[last..]);
}

/// A program as the body of a function, for the TypeScript compiler (`codemode check
/// --tsc`): see [`body_for_check`].
#[derive(Debug, Clone)]
pub(crate) struct CheckedBody {
    /// `prefix`, the program's body with its exports made statements, and `suffix`.
    pub(crate) text: String,
    map: PositionMap,
}

impl CheckedBody {
    /// Maps a 1-based (line, character column) in [`CheckedBody::text`] to the model's
    /// source (a column in the prefix maps to column 1).
    pub(crate) fn original_position(&self, line: u32, column: u32) -> (u32, u32) {
        self.map.original(line, column)
    }
}

/// `source` without its fences as the body of a function opened by `prefix` (one line) and
/// closed by `suffix`, its top-level exports made statements (see
/// [`forms::exports_as_statements`]; `value` names the variable, declared in `prefix`, an
/// `export default` value is assigned to). Unchanged when it does not parse: the compiler
/// then reports the syntax error. Parses on a stack sized for the text.
pub(crate) fn body_for_check(source: &str, prefix: &str, value: &str, suffix: &str) -> CheckedBody {
    let (body, line_offset) = unfence(source);
    let body = &*without_hashbang(body);
    let mut map = PositionMap {
        prefix_lines: 0,
        prefix: prefix.chars().count() as u32,
        line_offset,
        insertions: Vec::new(),
    };
    let mut text = String::with_capacity(prefix.len() + body.len() + suffix.len() + 32);
    text.push_str(prefix);
    let edits = with_parse_stack(source.len(), || {
        parse(body)
            .ok()
            .map(|parsed| forms::exports_as_statements(body, &parsed.module, value))
    });
    match edits {
        Ok(Some(edits)) => apply(body, &edits, &mut map, &mut text),
        _ => text.push_str(body),
    }
    text.push_str(suffix);
    CheckedBody { text, map }
}

/// The syntax tree of a program for static checks (`codemode check`): the module, the body
/// it was parsed from (the program without its markdown fences; span `lo` is the byte
/// offset in it plus 1), and how many lines precede the body in `source`.
///
/// # Errors
/// A [`SourceError`] for a syntax error, positioned in `source`.
pub(crate) fn parse_for_check(source: &str) -> Result<(Module, &str, u32), SourceError> {
    let (body, line_offset) = unfence(source);
    let parsed = parse(body).map_err(|e| e.shifted(line_offset))?;
    Ok((parsed.module, body, line_offset))
}

impl SourceError {
    /// The error `lines` lines further down (the lines before the program's body).
    fn shifted(mut self, lines: u32) -> Self {
        if let Some(l) = self.line.as_mut() {
            *l += lines;
        }
        self
    }
}
