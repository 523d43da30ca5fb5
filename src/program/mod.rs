//! From the text a model wrote to the JavaScript the engine runs (DESIGN §5 "Program form").
//!
//! 1. Markdown fences are removed (the first fenced block is the program; prose around it
//!    is ignored).
//! 2. The program is parsed as a TypeScript module with swc, to report syntax errors with
//!    line and column and to recognise its form: a body with top-level `return` and
//!    `await`, a last expression statement (its value is the result), `export default
//!    <expr>` (called when it is a function), an `async function main()` never called
//!    (it is called).
//! 3. The body is wrapped as `(async function program() {` … `})` on the same first line
//!    and stripped of TypeScript syntax with `swc_ts_fast_strip` (types become spaces, so
//!    lines and columns are kept).
//!
//! Every edit is recorded so that positions the engine reports map back to the model's own
//! source ([`Program::original_position`]).

use std::sync::{Arc, Mutex, PoisonError};

use swc_common::errors::{DiagnosticBuilder, Emitter, Handler};
use swc_common::sync::Lrc;
use swc_common::{BytePos, GLOBALS, Globals, SourceMap, Span, Spanned};
use swc_ecma_ast::{
    Decl, ExportDefaultDecl, ExportDefaultExpr, Ident, ImportDecl, Module, ModuleDecl, ModuleItem,
    Stmt,
};
use swc_ecma_parser::error::SyntaxError;
use swc_ecma_parser::{Parser, StringInput, Syntax, TsSyntax};
use swc_ecma_visit::{Visit, VisitMut, VisitMutWith, VisitWith};

/// The wrapper around the program body and its await mark (see [`wrapper`]).
struct Wrapper {
    /// Put before the program body, on its first line: the program's function sits in a
    /// closure with the await mark, and the code evaluates to `[program, () => lastAwait]`.
    prefix: String,
    /// Put after the program body.
    suffix: String,
    /// The variable that records the await about to happen: `await x` becomes
    /// `await (MARK = n, x)`, an assignment to a closure variable (a call per await cost a
    /// measurable share of a sequential tool call).
    mark: String,
}

/// The wrapper of this process. The mark's name ends in 16 random hex digits, so that no
/// program declares, shadows or reads it by accident (a program's own `__codemode_at`
/// would otherwise have been overwritten at every await).
fn wrapper() -> &'static Wrapper {
    static WRAPPER: std::sync::OnceLock<Wrapper> = std::sync::OnceLock::new();
    WRAPPER.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(0x636f_6465_6d6f_6465);
        let mark = format!("__codemode_at_{:016x}", hasher.finish());
        Wrapper {
            prefix: format!("(function(){{let {mark}=0;return[async function program() {{"),
            suffix: format!("\n}},()=>{mark}]}})()"),
            mark,
        }
    })
}

/// The prefix's length in characters (the columns it shifts on line 1).
fn prefix_chars() -> u32 {
    wrapper().prefix.chars().count() as u32
}

/// A program ready to evaluate.
#[derive(Debug, Clone)]
pub(crate) struct Program {
    /// JavaScript whose completion value is `[program, lastAwait]`: the async function to
    /// call, and a function returning the number of the await the program last reached
    /// (0 before the first; see [`Wrapper::mark`]).
    pub(crate) code: String,
    /// When the program was `export default <expr>`: call the value if it is a function.
    pub(crate) call_default: bool,
    /// The program's awaits, numbered from 1 (see [`Wrapper::mark`]).
    pub(crate) awaits: Vec<AwaitSite>,
    map: PositionMap,
}

/// A program that cannot run, with its position in the model's own source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourceError {
    pub(crate) name: &'static str,
    pub(crate) message: String,
    pub(crate) line: Option<u32>,
    pub(crate) column: Option<u32>,
}

#[derive(Debug, Clone, Default)]
struct PositionMap {
    /// Lines of prose and fence before the program in the model's text.
    line_offset: u32,
    /// Insertions into the body: (0-based line, 0-based char column where inserted,
    /// inserted chars).
    insertions: Vec<(u32, u32, u32)>,
}

impl Program {
    /// Maps a 1-based (line, column) in [`Program::code`] to the model's source; `None`
    /// for a position in the wrapper around the program (QuickJS reports the start of the
    /// program's function for some errors in declarations: no position beats a wrong one).
    pub(crate) fn original_position(&self, line: u32, column: u32) -> Option<(u32, u32)> {
        // The engine counts columns in UTF-8 bytes; positions here are in characters.
        let column = self.char_column(line, column);
        if line == 1 && column <= prefix_chars() {
            return None;
        }
        Some(self.map.original(line, column))
    }
}

impl Program {
    /// The 1-based character column of 1-based UTF-8 byte column `column` on 1-based
    /// `line` of [`Program::code`].
    fn char_column(&self, line: u32, column: u32) -> u32 {
        let Some(text) = self.code.split('\n').nth(line.saturating_sub(1) as usize) else {
            return column;
        };
        let mut byte = (column.saturating_sub(1) as usize).min(text.len());
        while !text.is_char_boundary(byte) {
            byte -= 1;
        }
        text[..byte].chars().count() as u32 + 1
    }
}

impl PositionMap {
    fn original(&self, line: u32, column: u32) -> (u32, u32) {
        let l0 = line.saturating_sub(1);
        let mut c0 = column.saturating_sub(1);
        if l0 == 0 {
            c0 = c0.saturating_sub(prefix_chars());
        }
        let mut shift = 0;
        for &(il, ic, len) in &self.insertions {
            if il == l0 && ic <= c0.saturating_sub(shift) {
                shift += len;
            }
        }
        c0 = c0.saturating_sub(shift);
        (l0 + 1 + self.line_offset, c0 + 1)
    }
}

/// Prepares `source` to run.
///
/// # Errors
/// A [`SourceError`] for a syntax error, a construct that cannot run (an `import`, a
/// TypeScript `enum` or `namespace`), or a program that only declares functions and calls
/// none.
pub(crate) fn prepare(source: &str) -> Result<Program, SourceError> {
    with_parse_stack(source.len(), || prepare_here(source))?
}

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
/// panicked.
pub(crate) fn with_parse_stack<R: Send>(
    len: usize,
    f: impl FnOnce() -> R + Send,
) -> Result<R, SourceError> {
    if len <= INLINE_PARSE_BYTES {
        return Ok(f());
    }
    let stack = len.saturating_mul(STACK_PER_BYTE).saturating_add(1 << 20);
    std::thread::scope(|scope| {
        let parser = std::thread::Builder::new()
            .name("codemode-parse".into())
            .stack_size(stack)
            .spawn_scoped(scope, f)
            .map_err(|e| SourceError {
                name: "LimitError",
                message: format!(
                    "the program ({len} bytes) is too large to parse: no stack of {} MiB for it ({e})",
                    stack >> 20
                ),
                line: None,
                column: None,
            })?;
        parser.join().map_err(|_| SourceError {
            name: "InternalError",
            message: "the parser failed on this program".into(),
            line: None,
            column: None,
        })
    })
}

/// [`prepare`] on this thread's stack: for callers already inside [`with_parse_stack`].
pub(crate) fn prepare_here(source: &str) -> Result<Program, SourceError> {
    let (body, line_offset) = unfence(source);
    let body = &*without_hashbang(body);
    let mut map = PositionMap {
        line_offset,
        insertions: Vec::new(),
    };
    let module = parse(body).map_err(|e| e.shifted(line_offset))?;
    let plan = plan_edits(body, &module).map_err(|e| e.shifted(line_offset))?;

    let wrap = wrapper();
    let mut edited = String::with_capacity(wrap.prefix.len() + body.len() + wrap.suffix.len() + 32);
    edited.push_str(&wrap.prefix);
    let mut last = 0usize;
    let lines = LineIndex::new(body);
    for edit in &plan.edits {
        edited.push_str(&body[last..edit.start]);
        match &edit.kind {
            EditKind::Insert(text) => {
                let (line, col) = lines.line_col(body, edit.start);
                map.insertions
                    .push((line, col, text.chars().count() as u32));
                edited.push_str(text);
                last = edit.start;
            }
            EditKind::Replace { end, text } => {
                edited.push_str(text);
                last = *end;
            }
        }
    }
    edited.push_str(&body[last..]);
    if let Some(tail) = &plan.append {
        edited.push('\n');
        edited.push_str(tail);
    }
    edited.push_str(&wrap.suffix);

    let code = strip_types(edited).map_err(|mut e| {
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

/// The syntax tree of a program for static checks (`codemode check`): the module, the body
/// it was parsed from (the program without its markdown fences; span `lo` is the byte
/// offset in it plus 1), and how many lines precede the body in `source`.
///
/// # Errors
/// A [`SourceError`] for a syntax error, positioned in `source`.
pub(crate) fn parse_for_check(source: &str) -> Result<(Module, &str, u32), SourceError> {
    let (body, line_offset) = unfence(source);
    let module = parse(body).map_err(|e| e.shifted(line_offset))?;
    Ok((module, body, line_offset))
}

impl SourceError {
    fn shifted(mut self, lines: u32) -> Self {
        if let Some(l) = self.line.as_mut() {
            *l += lines;
        }
        self
    }
}

/// Finds the program inside markdown fences. Returns the body and how many lines precede
/// it in `source`.
pub(crate) fn unfence(source: &str) -> (&str, u32) {
    let is_fence = |line: &str| {
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
    if !opens_with_fence && parse(source).is_ok() {
        return (source, 0);
    }
    // Blocks: (tag, body start byte, body end byte, lines before body).
    let mut blocks: Vec<(String, usize, usize, u32)> = Vec::new();
    let mut offset = 0usize;
    let mut open: Option<(String, usize, u32)> = None;
    for (index, line) in source.split_inclusive('\n').enumerate() {
        let content = line.trim_end_matches(['\n', '\r']);
        if is_fence(content) {
            match open.take() {
                None => {
                    let tag = content
                        .trim_start_matches(' ')
                        .trim_start_matches(['`', '~'])
                        .trim()
                        .to_ascii_lowercase();
                    open = Some((tag, offset + line.len(), index as u32 + 1));
                }
                Some((tag, start, lines)) => blocks.push((tag, start, offset, lines)),
            }
        }
        offset += line.len();
    }
    if let Some((tag, start, lines)) = open {
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

/// 0-based line and char column of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (u32, u32) {
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

fn position_error(text: &str, offset: usize, message: String) -> SourceError {
    let (line, col) = line_col(text, offset.min(text.len()));
    SourceError {
        name: "SyntaxError",
        message,
        line: Some(line + 1),
        column: Some(col + 1),
    }
}

fn ts_syntax() -> Syntax {
    Syntax::Typescript(TsSyntax {
        tsx: false,
        // The engine has no decorators: refused here, with their position, in run and check.
        decorators: false,
        ..Default::default()
    })
}

/// `body` with a leading `#!` line written as a `//` comment (same length: positions stay),
/// since the program runs inside a wrapper where a hashbang is not at the start.
fn without_hashbang(body: &str) -> std::borrow::Cow<'_, str> {
    match body.strip_prefix("#!") {
        Some(rest) => format!("//{rest}").into(),
        None => body.into(),
    }
}

fn parse(body: &str) -> Result<Module, SourceError> {
    let body = &*without_hashbang(body);
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
    let error = |span: Span, message: String| {
        let at = offset(span);
        let message = if body.get(at..).is_some_and(|rest| rest.starts_with('@')) {
            "decorators (`@…`) are not supported: the engine has none".to_owned()
        } else {
            message
        };
        position_error(body, at, message)
    };
    let first = match (module, errors.into_iter().next()) {
        (Ok(m), None) => return Ok(m),
        (Err(e), _) | (Ok(_), Some(e)) => e,
    };
    let line_break_after_await = has_await_before_a_line_break(body);
    if line_break_after_await && let Some(m) = parse_in_async_function(body) {
        return Ok(m);
    }
    let mut message = first.kind().msg().into_owned();
    if line_break_after_await && matches!(first.kind(), SyntaxError::InvalidIdentInAsync) {
        message.push_str(
            " (an `await` followed by a line break at the top level of a program with `export` or `import` is read as a name: put what it awaits on the same line)",
        );
    }
    Err(error(first.span(), message))
}

/// Whether `body` has an `await` followed, on its line, only by blanks or a comment: the
/// case swc misreads at a module's top level (see [`parse_in_async_function`]).
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

/// The body parsed as the inside of an async function, its statements taken as a module's
/// (spans as in `body`). swc refuses `await` followed by a line break at the top level of
/// a module (`const r = await\n  tools.x()`, also inside brackets and calls), which
/// JavaScript allows and which it accepts inside an async function; a body that fails to
/// parse and has such an `await` gets this second parse (one with `import` or `export`
/// does not parse here). `None` when it does not parse either.
fn parse_in_async_function(body: &str) -> Option<Module> {
    const OPEN: &str = "async function __codemode_body() {";
    let text = format!("{OPEN}{body}\n}}");
    let input = StringInput::new(&text, BytePos(1), BytePos(1 + text.len() as u32));
    let mut parser = Parser::new(ts_syntax(), input, None);
    let mut module = parser.parse_module().ok()?;
    if !parser.take_errors().is_empty() {
        return None;
    }
    let Some(ModuleItem::Stmt(Stmt::Decl(Decl::Fn(f)))) = module.body.pop() else {
        return None;
    };
    if !module.body.is_empty() {
        return None;
    }
    let stmts = f.function.body?.stmts;
    let mut module = Module {
        span: module.span,
        body: stmts.into_iter().map(ModuleItem::Stmt).collect(),
        shebang: None,
    };
    module.visit_mut_with(&mut ShiftSpans(OPEN.len() as u32));
    Some(module)
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

enum EditKind {
    Insert(String),
    Replace { end: usize, text: String },
}

struct Edit {
    start: usize,
    kind: EditKind,
}

struct Plan {
    edits: Vec<Edit>,
    append: Option<String>,
    call_default: bool,
    awaits: Vec<AwaitSite>,
}

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

/// Spaces of the same length as `text[start..end]`, keeping its line breaks.
fn blank(text: &str, start: usize, end: usize) -> String {
    text[start..end]
        .chars()
        .map(|c| if c == '\n' || c == '\r' { c } else { ' ' })
        .collect()
}

fn plan_edits(body: &str, module: &Module) -> Result<Plan, SourceError> {
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
                kind: EditKind::Insert("return ".to_owned()),
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
                    name: "ProgramError",
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
    // Mark every await so a deadlock can say where the program waits.
    let mut finder = AwaitFinder { spans: Vec::new() };
    module.visit_with(&mut finder);
    let mut awaits = Vec::with_capacity(finder.spans.len());
    let lines = LineIndex::new(body);
    for (n, (at, arg_lo, arg_hi)) in finder.spans.into_iter().enumerate() {
        let (line, col) = lines.line_col(body, off(at));
        let written = &body[off(arg_lo).min(body.len())..off(arg_hi).min(body.len())];
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
            start: off(arg_lo),
            kind: EditKind::Insert(format!("({} = {}, ", wrapper().mark, n + 1)),
        });
        edits.push(Edit {
            start: off(arg_hi),
            kind: EditKind::Insert(")".to_owned()),
        });
    }
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
    let Ok(module) = parse(body) else {
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

/// A diagnostic's message and primary span.
type Diagnostic = (String, Option<Span>);

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
    static SWC_GLOBALS: Globals = Globals::new();
}

/// Strips TypeScript syntax (strip-only: positions stay).
fn strip_types(code: String) -> Result<String, SourceError> {
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
                    name: "SyntaxError",
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
                        name: "SyntaxError",
                        message,
                        line: Some(loc.line as u32),
                        column: Some(loc.col_display as u32 + 1),
                    })
                }
                _ => Err(SourceError {
                    name: "SyntaxError",
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
    use super::*;

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
        assert_eq!(e.name, "SyntaxError");
        assert_eq!((e.line, e.column), (Some(1), Some(7)));
    }

    #[test]
    fn last_expression_becomes_the_result() {
        let p = prepare("const a = 1;\na + 1").unwrap();
        assert!(p.code.contains("return a + 1"), "{}", p.code);
        assert!(p.code.starts_with(&wrapper().prefix));
    }

    #[test]
    fn fences_and_prose_are_removed_and_lines_kept() {
        let p = prepare("Here it is:\n```ts\nconst x: number = 1;\nx\n```\nDone.").unwrap();
        assert!(!p.code.contains("Here"));
        assert!(p.code.contains("const x         = 1;"), "{}", p.code);
        // line 2 of the code is line 4 of the model's text
        assert_eq!(p.original_position(2, 1).map(|p| p.0), Some(4));
    }

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
            (e.name, e.message.as_str(), e.line, e.column),
            (
                "SyntaxError",
                "decorators (`@…`) are not supported: the engine has none",
                Some(2),
                Some(1)
            )
        );
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

    #[test]
    fn syntax_error_has_the_models_position() {
        let e = prepare("const a = 1;\nconst b = ;\n").unwrap_err();
        assert_eq!((e.line, e.column), (Some(2), Some(11)));
    }

    #[test]
    fn insertion_shifts_only_later_columns() {
        let p = prepare("x.y").unwrap();
        // `return ` was inserted before x on line 1 after the prefix.
        let col_in_code = wrapper().prefix.len() as u32 + "return ".len() as u32 + 1;
        assert_eq!(p.original_position(1, col_in_code), Some((1, 1)));
        assert_eq!(p.original_position(1, 1), None);
    }

    #[test]
    fn enum_is_refused_with_its_position() {
        let e = prepare("const a = 1;\nenum Color { Red }\n").unwrap_err();
        assert!(e.message.contains("enum"), "{}", e.message);
        assert_eq!(e.line, Some(2));
    }

    #[test]
    fn uncalled_main_is_called() {
        let p = prepare("async function main() { return 5 }").unwrap();
        assert!(p.code.contains("return await main();"));
        let e = prepare("function helper() { return 5 }").unwrap_err();
        assert!(e.message.contains("never calls"), "{}", e.message);
    }
}
