//! Writes a [`RecordedRun`] as one self-contained HTML file.
//!
//! The summary, the limits, the result or error, the console lines and the program text
//! are written here, every string escaped. The calls are data: JSON in a
//! `<script type="application/json">` block (which no browser runs), with `<`, `>`, `&` and
//! the line separators written as `\u` escapes so that no string can end the block. The
//! report's own script (`report.js`) draws the timeline on a canvas and the call list with
//! its cards from that data, through `textContent` only. A Content-Security-Policy meta tag
//! lets no script run but that one, named by its SHA-256 hash, and no style but the
//! report's own; nothing is loaded from anywhere.

use std::fmt::Write as _;

use base64::Engine as _;
use serde_json::Value;
use sha2::Digest as _;

use super::{RecordedCall, RecordedRun, RecordedStatus};

/// The report's stylesheet.
const STYLE: &str = include_str!("report.css");
/// The report's script: timeline and call list.
const SCRIPT: &str = include_str!("report.js");
/// Most rows the timeline draws: past it, lanes share rows.
pub const MAX_ROWS: usize = 240;

/// The report of `run` as one HTML document (UTF-8), self-contained: no network, no
/// external script, style or font. See the module's documentation for what it holds and
/// how it is kept safe to open.
pub fn render_html(run: &RecordedRun) -> String {
    let layout = Layout::of(&run.calls);
    let mut html = String::with_capacity(64 * 1024 + run.calls.len() * 160);
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         script-src '{}'; style-src '{}'; img-src data:; base-uri 'none'; form-action 'none'\">\n\
         <meta name=\"viewport\" content=\"width=device-width\">\n\
         <title>{} · codemode run report</title>\n<style>{STYLE}</style></head>\n<body>\n",
        hash(SCRIPT),
        hash(STYLE),
        escape(&run.title)
    );
    summary(&mut html, run);
    limits(&mut html, run, &layout);
    html.push_str(
        "<section id=\"timeline\"><h2>Timeline</h2>\
         <p class=\"note\">One row per concurrent slot; calls made from inside a call are in the rows below it. \
         Hover for a call, click to see its cards.</p>\
         <div id=\"timeline-box\"><canvas id=\"timeline-canvas\" width=\"1200\" height=\"60\"></canvas>\
         <div id=\"timeline-tip\" hidden></div></div>\
         <div id=\"call-detail\" class=\"detail\"></div></section>\n",
    );
    let _ = writeln!(
        html,
        "<section id=\"calls\"><h2>Calls <span class=\"count\">{}</span></h2>\
         <ol id=\"call-list\"></ol><button id=\"more-calls\" type=\"button\" hidden></button></section>",
        run.calls.len()
    );
    outcome(&mut html, run);
    console(&mut html, run);
    program(&mut html, run);
    html.push_str("<script type=\"application/json\" id=\"report-data\">");
    let data = Data {
        rows: layout.rows,
        span_us: layout.span_us,
        calls: Calls(&run.calls, &layout.placed),
    };
    // Written straight into the page, escaped on the way: no copy of the calls.
    let _ = serde_json::to_writer(ScriptText(&mut html), &data);
    let _ = write!(
        html,
        "</script>\n<script>{SCRIPT}</script>\n</body></html>\n"
    );
    html
}

/// `'sha256-…'` of `text`, as a Content-Security-Policy source.
fn hash(text: &str) -> String {
    let digest = sha2::Sha256::digest(text.as_bytes());
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// `text` with the five characters HTML gives meaning escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Bidirectional controls would reorder what is shown: shown as their names.
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {
                let _ = write!(out, "⟨U+{:04X}⟩", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// Appends JSON to a page so that it can stand inside a `<script>` element: `<`, `>` and
/// `&` (so no `</script>` or `<!--`) and U+2028 and U+2029 as `\\u` escapes, which JSON
/// reads back as the same characters. serde_json writes whole UTF-8 sequences, so each
/// write is text.
struct ScriptText<'a>(&'a mut String);

impl std::io::Write for ScriptText<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let text = std::str::from_utf8(bytes)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        for c in text.chars() {
            match c {
                '<' => self.0.push_str("\\u003c"),
                '>' => self.0.push_str("\\u003e"),
                '&' => self.0.push_str("\\u0026"),
                '\u{2028}' => self.0.push_str("\\u2028"),
                '\u{2029}' => self.0.push_str("\\u2029"),
                c => self.0.push(c),
            }
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The data block: `{"rows", "span_us", "calls": [call…]}`.
#[derive(serde::Serialize)]
struct Data<'a> {
    rows: usize,
    span_us: u64,
    calls: Calls<'a>,
}

/// The calls with where each is drawn, serialized as [`CallData`] one by one.
struct Calls<'a>(&'a [RecordedCall], &'a [Placed]);

impl serde::Serialize for Calls<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().zip(self.1).map(|(c, p)| CallData::of(c, p)))
    }
}

/// A call as the script reads it (short keys: a report may hold many).
#[derive(serde::Serialize)]
struct CallData<'a> {
    id: u64,
    tool: &'a str,
    s: u64,
    e: Option<u64>,
    st: RecordedStatus,
    r: usize,
    d: usize,
    p: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    a: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cc: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rc: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    er: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    x: bool,
}

impl<'a> CallData<'a> {
    fn of(c: &'a RecordedCall, p: &Placed) -> Self {
        CallData {
            id: c.id,
            tool: &c.tool,
            s: c.start_us,
            e: c.end_us,
            st: c.status,
            r: p.row,
            d: p.depth,
            p: c.parent,
            a: c.arguments.as_ref(),
            cc: c.call_card.as_ref(),
            rc: c.result_card.as_ref(),
            er: c.error.as_deref(),
            x: c.details_left_out,
        }
    }
}

/// Where each call is drawn.
struct Placed {
    depth: usize,
    row: usize,
}

/// The timeline's rows: calls of each depth (0 for calls nothing recorded made, 1 for the
/// calls those made, …) take the first free lane of their depth, and the lanes of each
/// depth come below those of the depth above; past [`MAX_ROWS`] lanes, lanes share rows.
struct Layout {
    placed: Vec<Placed>,
    rows: usize,
    span_us: u64,
    /// Most calls running at once, among the calls made from inside another call.
    most_nested_in_flight: usize,
}

impl Layout {
    fn of(calls: &[RecordedCall]) -> Layout {
        let span_us = calls
            .iter()
            .map(|c| c.end_us.unwrap_or(c.start_us))
            .max()
            .unwrap_or(0)
            .max(1);
        let mut depth = vec![0usize; calls.len()];
        for (i, c) in calls.iter().enumerate() {
            // A parent starts before its child, so it is placed first.
            depth[i] = c.parent.filter(|&p| p < i).map_or(0, |p| depth[p] + 1);
        }
        let deepest = depth.iter().copied().max().unwrap_or(0);
        let mut lane = vec![0usize; calls.len()];
        let mut lanes_at = vec![0usize; deepest + 1];
        let mut most_nested_in_flight = 0;
        for (d, lanes) in lanes_at.iter_mut().enumerate() {
            // The end of the last call in each lane of this depth.
            let mut ends: Vec<u64> = Vec::new();
            for (i, c) in calls.iter().enumerate().filter(|(i, _)| depth[*i] == d) {
                let end = c.end_us.unwrap_or(span_us);
                let running = ends.iter().filter(|&&e| e > c.start_us).count() + 1;
                if d > 0 {
                    most_nested_in_flight = most_nested_in_flight.max(running);
                }
                match ends.iter().position(|&e| e <= c.start_us) {
                    Some(free) => {
                        ends[free] = end;
                        lane[i] = free;
                    }
                    None => {
                        lane[i] = ends.len();
                        ends.push(end);
                    }
                }
            }
            *lanes = ends.len();
        }
        let total: usize = lanes_at.iter().sum();
        // Past MAX_ROWS lanes, each depth gets rows in proportion to its lanes (at least
        // one), so that no call shares a row with a call of another depth.
        let rows_at: Vec<usize> = lanes_at
            .iter()
            .map(|&n| {
                if total > MAX_ROWS {
                    (n * MAX_ROWS / total).max(1)
                } else {
                    n
                }
            })
            .collect();
        let first_row: Vec<usize> = rows_at
            .iter()
            .scan(0, |at, n| {
                let here = *at;
                *at += n;
                Some(here)
            })
            .collect();
        let rows = rows_at.iter().sum::<usize>().max(1);
        let placed = (0..calls.len())
            .map(|i| {
                let d = depth[i];
                Placed {
                    depth: d,
                    row: first_row[d] + lane[i] * rows_at[d] / lanes_at[d].max(1),
                }
            })
            .collect();
        Layout {
            placed,
            rows,
            span_us,
            most_nested_in_flight,
        }
    }
}

fn status_of(output: &Value) -> &str {
    output
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
}

fn summary(html: &mut String, run: &RecordedRun) {
    let status = status_of(&run.output);
    let failed = run
        .calls
        .iter()
        .filter(|c| c.parent.is_some() && c.status == RecordedStatus::Error)
        .count();
    let _ = write!(
        html,
        "<header><h1>{} <span class=\"status status-{}\">{}</span></h1><p>",
        escape(&run.title),
        escape(status),
        escape(status)
    );
    if let Some(usage) = &run.usage {
        let _ = write!(html, "{} ms · ", usage.elapsed.as_millis());
    }
    let made = run.calls.iter().filter(|c| c.parent.is_some()).count();
    let _ = write!(
        html,
        "{made} tool call{} from the program, {failed} failed</p>",
        if made == 1 { "" } else { "s" }
    );
    if let Some(e) = run.output.get("error") {
        let _ = write!(
            html,
            "<p class=\"error-summary\">{}</p>",
            escape(&error_line(e))
        );
    }
    html.push_str("</header>\n");
}

/// `Name: message (line L, column C)` of a canonical error.
fn error_line(e: &Value) -> String {
    let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
    let mut line = format!("{}: {}", text("name"), text("message"));
    if let Some(l) = e.get("line").and_then(Value::as_u64) {
        let _ = write!(line, " (line {l}");
        if let Some(c) = e.get("column").and_then(Value::as_u64) {
            let _ = write!(line, ", column {c}");
        }
        line.push(')');
    }
    line
}

fn limits(html: &mut String, run: &RecordedRun, layout: &Layout) {
    let l = &run.limits;
    let shown = crate::run_code::render_text(&run.output).chars().count() as u64;
    let usage = run.usage.as_ref();
    let rows: [(&str, Option<u64>, u64, Unit); 6] = [
        (
            "time",
            usage.map(|u| u.elapsed.as_millis() as u64),
            l.timeout.as_millis() as u64,
            Unit::Millis,
        ),
        (
            "memory",
            usage.map(|u| u.memory_peak),
            l.memory as u64,
            Unit::Bytes,
        ),
        (
            "tool calls",
            usage.map(|u| u.tool_calls),
            l.max_tool_calls as u64,
            Unit::Count,
        ),
        (
            "calls at once",
            Some(layout.most_nested_in_flight as u64),
            l.max_in_flight as u64,
            Unit::Count,
        ),
        (
            "console output",
            usage.map(|u| u.console_bytes),
            l.max_console_bytes,
            Unit::Bytes,
        ),
        (
            "output shown to the model",
            Some(shown),
            run.output_cap as u64,
            Unit::Characters,
        ),
    ];
    html.push_str(
        "<section id=\"limits\"><h2>Limits</h2><table><thead><tr><th>limit</th><th>used</th>\
         <th>of</th><th></th></tr></thead><tbody>",
    );
    for (name, used, limit, unit) in rows {
        let used_text = used.map_or("not reported".to_owned(), |u| unit.show(u));
        let limit_text = unit.show(limit);
        let share = used.map_or(String::new(), |u| {
            format!(
                "<meter min=\"0\" max=\"{limit}\" low=\"{}\" high=\"{}\" optimum=\"0\" value=\"{u}\"></meter> {}%",
                limit / 2,
                limit / 10 * 9,
                u.saturating_mul(100).checked_div(limit).unwrap_or(0)
            )
        });
        let _ = write!(
            html,
            "<tr data-limit=\"{name}\"><td>{name}</td><td>{used_text}</td><td>{limit_text}</td><td>{share}</td></tr>"
        );
    }
    html.push_str("</tbody></table></section>\n");
}

/// How a limit's figures read.
#[derive(Clone, Copy)]
enum Unit {
    Millis,
    Bytes,
    Count,
    Characters,
}

impl Unit {
    fn show(self, n: u64) -> String {
        match self {
            Unit::Millis => format!("{n} ms"),
            Unit::Count => n.to_string(),
            Unit::Characters => format!("{n} characters"),
            Unit::Bytes if n >= 10 << 20 => format!("{} MiB", n >> 20),
            Unit::Bytes if n >= 10 << 10 => format!("{} KiB", n >> 10),
            Unit::Bytes => format!("{n} bytes"),
        }
    }
}

fn outcome(html: &mut String, run: &RecordedRun) {
    html.push_str("<section id=\"outcome\">");
    if let Some(paused) = run.output.get("paused") {
        let id = paused.get("id").and_then(Value::as_str).unwrap_or_default();
        let _ = write!(
            html,
            "<h2>Paused</h2><p>The run waits for a decision on these calls; it goes on with <code>codemode resume {} --approve N</code> (or <code>--deny N</code>, or <code>run_code_resume</code>), where N counts the program's own calls from 1: it is not the #number of the call list.</p><ul class=\"approvals\">",
            escape(id)
        );
        for a in paused
            .get("approvals")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let text = |k: &str| a.get(k).and_then(Value::as_str).unwrap_or_default();
            let _ = write!(
                html,
                "<li>N = {} <code>{}</code>: {}</li>",
                a.get("call").and_then(Value::as_u64).unwrap_or(0),
                escape(text("tool")),
                escape(text("prompt"))
            );
        }
        html.push_str("</ul></section>\n");
        return;
    }
    match run.output.get("error") {
        Some(e) => {
            let _ = write!(
                html,
                "<h2>Error</h2><pre class=\"error\">{}</pre>",
                escape(&error_line(e))
            );
        }
        None => {
            let result = match run.output.get("result") {
                None => "undefined".to_owned(),
                Some(v) => serde_json::to_string_pretty(v).unwrap_or_default(),
            };
            let _ = write!(
                html,
                "<h2>Result</h2><pre class=\"result\">{}</pre>",
                escape(&result)
            );
        }
    }
    if let Some(spill) = run.output.get("spill") {
        let text = match spill.get("path").and_then(Value::as_str) {
            Some(path) => format!(
                "The output was cut, as the model saw it; the whole of it is in {path} ({} bytes).",
                spill.get("bytes").and_then(Value::as_u64).unwrap_or(0)
            ),
            None => format!(
                "The output was cut, and the whole of it could not be saved: {}",
                spill
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            ),
        };
        let _ = write!(html, "<p class=\"spill\">{}</p>", escape(&text));
    }
    html.push_str("</section>\n");
}

fn console(html: &mut String, run: &RecordedRun) {
    let logs = run
        .output
        .get("logs")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let _ = write!(
        html,
        "<section id=\"console\"><h2>Console <span class=\"count\">{}</span></h2><div class=\"logs\">",
        logs.len()
    );
    for entry in logs {
        let level = entry.get("level").and_then(Value::as_str).unwrap_or("log");
        let level = match level {
            "log" | "info" | "debug" | "warn" | "error" => level,
            _ => "log",
        };
        let text = entry
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let _ = write!(
            html,
            "<div class=\"log log-{level}\"><span class=\"level\">{level}</span><span class=\"text\">{}</span></div>",
            escape(text)
        );
    }
    html.push_str("</div></section>\n");
}

/// The lines of a program as ECMAScript counts them (its line terminators: LF, CR, CRLF,
/// U+2028, U+2029), so that an error's line is the line shown.
fn source_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let text = rest?;
        match text.find(['\n', '\r', '\u{2028}', '\u{2029}']) {
            None => {
                rest = None;
                (!text.is_empty()).then_some(text)
            }
            Some(at) => {
                let end = if text[at..].starts_with("\r\n") {
                    at + 2
                } else {
                    at + text[at..].chars().next().map_or(1, char::len_utf8)
                };
                rest = Some(&text[end..]);
                Some(&text[..at])
            }
        }
    })
}

/// What goes before the caret under `line` to point at 1-based `column` (UTF-16 code
/// units, as the engine counts): a tab where the line has one, a space for anything else.
fn caret_pad(line: &str, column: u64) -> String {
    let mut units = column.saturating_sub(1).min(2_000);
    let mut pad = String::new();
    for c in line.chars() {
        if units == 0 {
            break;
        }
        pad.push(if c == '\t' { '\t' } else { ' ' });
        units = units.saturating_sub(c.len_utf16() as u64);
    }
    pad
}

fn program(html: &mut String, run: &RecordedRun) {
    let error = run.output.get("error");
    let error_at = error
        .and_then(|e| e.get("line"))
        .and_then(Value::as_u64)
        .and_then(|l| usize::try_from(l).ok());
    html.push_str("<section id=\"program\"><h2>Program</h2><div class=\"source\">");
    if run.program.is_empty() {
        html.push_str(
            "<p class=\"note\">The program's text is not part of this report (a resumed run).</p>",
        );
    }
    for (i, line) in source_lines(&run.program).enumerate() {
        let n = i + 1;
        let marked = error_at == Some(n);
        let _ = write!(
            html,
            "<div class=\"line{}\" id=\"L{n}\"><span class=\"no\">{n}</span><code>{}</code></div>",
            if marked { " error-line" } else { "" },
            escape(line)
        );
        if marked && let Some(e) = error {
            let column = e.get("column").and_then(Value::as_u64).unwrap_or(1);
            let _ = write!(
                html,
                "<div class=\"error-note\"><span class=\"no\"></span><code>{}^ {}</code></div>",
                caret_pad(line, column),
                escape(&error_line(e))
            );
        }
    }
    html.push_str("</div></section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_end_where_ecmascript_ends_them() {
        let lines: Vec<&str> = source_lines("a\r\nb\rc\u{2028}d\ne\n").collect();
        assert_eq!(lines, ["a", "b", "c", "d", "e"]);
        assert_eq!(source_lines("").count(), 0);
        assert_eq!(caret_pad("\t\tx = 1", 5), "\t\t  ");
        assert_eq!(escape("a\u{202e}b"), "a⟨U+202E⟩b");
    }

    #[test]
    fn escaping_leaves_no_markup() {
        assert_eq!(
            escape("<script>a&b\"c'</script>"),
            "&lt;script&gt;a&amp;b&quot;c&#39;&lt;/script&gt;"
        );
        let mut data = String::new();
        serde_json::to_writer(
            ScriptText(&mut data),
            &json!({"x": "</script><!--\u{2028}&"}),
        )
        .unwrap();
        assert!(!data.contains('<') && !data.contains('>') && !data.contains('&'));
        assert!(!data.contains('\u{2028}'));
        assert_eq!(
            serde_json::from_str::<Value>(&data).unwrap(),
            json!({"x": "</script><!--\u{2028}&"})
        );
    }

    fn call(parent: Option<usize>, start_us: u64, end_us: u64) -> RecordedCall {
        RecordedCall {
            id: 0,
            parent,
            tool: "t".into(),
            start_us,
            end_us: Some(end_us),
            status: RecordedStatus::Ok,
            arguments: None,
            call_card: None,
            result_card: None,
            error: None,
            details_left_out: false,
        }
    }

    #[test]
    fn concurrent_calls_take_lanes_below_their_parent() {
        // run_code 0..100; its calls a 10..50 and b 20..30 overlap, c 60..70 reuses a's lane.
        let calls = [
            call(None, 0, 100),
            call(Some(0), 10, 50),
            call(Some(0), 20, 30),
            call(Some(0), 60, 70),
        ];
        let layout = Layout::of(&calls);
        let rows: Vec<usize> = layout.placed.iter().map(|p| p.row).collect();
        assert_eq!(rows, [0, 1, 2, 1]);
        assert_eq!(layout.rows, 3);
        assert_eq!(layout.most_nested_in_flight, 2);
        assert_eq!(layout.span_us, 100);
    }

    #[test]
    fn past_the_row_limit_lanes_share_rows() {
        let mut calls = vec![call(None, 0, 1_000)];
        calls.extend((0..1_000).map(|_| call(Some(0), 1, 999)));
        let layout = Layout::of(&calls);
        assert_eq!(layout.rows, MAX_ROWS);
        assert!(layout.placed.iter().all(|p| p.row < MAX_ROWS));
        assert_eq!(layout.most_nested_in_flight, 1_000);
    }
}
