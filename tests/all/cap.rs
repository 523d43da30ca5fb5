//! The output cap and spill, through `run_code`.

use std::sync::{Arc, Mutex};

use codemode::run_code::{Limits, RunCodeConfig, SpillConfig, render_text};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::support::{Harness, log_texts, test_tool};

/// The last line of a preview when spilling is off (a fixed text, so previews have exact
/// expected values).
const NOT_SAVED: &str =
    "[output cut to fit; the full output could not be saved: no spill folder is configured.]";

/// A harness with an output cap of `cap` characters and spilling off, and a tool `give`
/// that returns whatever the test puts in the returned cell. The default deadline: the
/// big outputs here take seconds in a debug build on a loaded machine.
fn capped(cap: usize, spill: bool) -> (Harness, Arc<Mutex<Value>>) {
    let config = RunCodeConfig::default()
        .limits(Limits::default())
        .output_cap(cap);
    let mut h = if spill {
        Harness::with_config(config)
    } else {
        Harness::without_spill(config)
    };
    let cell = Arc::new(Mutex::new(Value::Null));
    let give = cell.clone();
    h.add(test_tool("give").execute(move |_args, _e| {
        let v = give.lock().unwrap().clone();
        async move { Ok(v) }
    }));
    (h, cell)
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// The text of the model-facing preview.
fn preview(v: &Value) -> String {
    render_text(v)
}

/// The `result: …` part of a preview, parsed.
fn preview_result(text: &str) -> Value {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("result: "))
        .expect("a result line");
    serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("the preview's result parses: {e}\n{line}"))
}

#[tokio::test]
async fn ascii_over_the_cap_shows_head_marker_and_tail() {
    let (h, _) = capped(200, false);
    let v = h.run("return 'a'.repeat(150) + 'b'.repeat(150)").await;
    let text = preview(&v);
    // 200 characters: the notice (86) and its line break take 87, `result: ` 8, the quotes
    // 2; the string keeps 103 characters: 37 + marker + 37 (the marker's bound is 29).
    assert_eq!(
        text,
        format!(
            "result: \"{}[… 226 characters dropped …]{}\"\n{NOT_SAVED}",
            "a".repeat(37),
            "b".repeat(37)
        )
    );
    assert!(chars(&text) <= 200);
    assert_eq!(
        v["spill"],
        json!({"error": "no spill folder is configured"})
    );
}

#[tokio::test]
async fn multibyte_text_is_cut_on_character_boundaries() {
    let (h, _) = capped(200, false);
    // é is 2 bytes, 語 3, 𝄞 4 (a surrogate pair in JavaScript).
    let v = h.run("return 'é語𝄞'.repeat(100)").await;
    let r = v["result"].as_str().unwrap();
    let (head, rest) = r.split_once("[… ").unwrap();
    let (marker, tail) = rest.split_once(" …]").unwrap();
    assert_eq!(head, "é語𝄞".repeat(12) + "é");
    assert_eq!(marker, "226 characters dropped");
    assert_eq!(tail, "𝄞".to_owned() + &"é語𝄞".repeat(12));
    assert_eq!(chars(head) + 226 + chars(tail), 300);
    assert!(chars(&preview(&v)) <= 200);
}

#[tokio::test]
async fn an_emoji_with_its_modifier_is_never_split() {
    let (h, _) = capped(200, false);
    // 👍🏽 is two characters (and four UTF-16 units); the cut point falls inside one.
    let v = h.run("return '👍🏽'.repeat(101)").await;
    let r = v["result"].as_str().unwrap();
    let (head, rest) = r.split_once("[… ").unwrap();
    let (_, tail) = rest.split_once(" …]").unwrap();
    assert!(!head.is_empty() && !tail.is_empty());
    assert_eq!(
        head,
        "👍🏽".repeat(chars(head) / 2),
        "whole graphemes: {head}"
    );
    assert_eq!(
        tail,
        "👍🏽".repeat(chars(tail) / 2),
        "whole graphemes: {tail}"
    );
    // The log line of a console cut keeps whole graphemes too.
    let v = h.run("console.log('👩‍👩‍👧‍👦'.repeat(400)); return 1").await;
    let line = v["logs"][0]["text"].as_str().unwrap();
    let family = "👩‍👩‍👧‍👦";
    assert_eq!(line, family.repeat(chars(line) / chars(family)), "{line}");
    assert!(v["logs"][1]["text"].as_str().unwrap().starts_with("[… "));
}

#[tokio::test]
async fn exactly_at_the_cap_nothing_is_cut_and_one_more_is() {
    let (h, _) = capped(1_000, true);
    // `result: "` + 990 characters + `"` is exactly 1 000.
    let v = h.run("return 'x'.repeat(990)").await;
    assert_eq!(chars(&preview(&v)), 1_000);
    assert_eq!(v["result"], "x".repeat(990));
    assert!(v.get("spill").is_none(), "{v}");
    assert_eq!(std::fs::read_dir(h.spill.path()).unwrap().count(), 0);

    let v = h.run("return 'x'.repeat(991)").await;
    let text = preview(&v);
    assert!(chars(&text) <= 1_000, "{}", chars(&text));
    assert!(text.contains("characters dropped …]"), "{text}");
    let path = v["spill"]["path"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(path).unwrap(),
        format!("result: \"{}\"\n", "x".repeat(991))
    );
    assert_eq!(v["spill"]["bytes"], 1_002);
    assert!(
        text.ends_with(&format!("all of it (1002 bytes) is in {path}.]")),
        "{text}"
    );
}

#[tokio::test]
async fn a_100_000_element_array_keeps_its_first_items_and_parses() {
    let (h, _) = capped(20_000, true);
    let v = h
        .run("return Array.from({length: 100000}, (_, i) => i)")
        .await;
    let text = preview(&v);
    assert!(chars(&text) <= 20_000);
    let shown = preview_result(&text);
    assert_eq!(shown, v["result"]);
    let items = shown.as_array().unwrap();
    let kept = items.len() - 1;
    for (i, item) in items[..kept].iter().enumerate() {
        assert_eq!(item, &json!(i));
    }
    assert_eq!(
        items[kept],
        json!(format!("… {} more items", 100_000 - kept))
    );
    assert!(kept > 2_500, "the preview uses its budget: {kept} items");
    // The spill holds all of it, one item per line.
    let full = std::fs::read_to_string(v["spill"]["path"].as_str().unwrap()).unwrap();
    let parsed: Value = serde_json::from_str(full.strip_prefix("result: ").unwrap()).unwrap();
    assert_eq!(parsed.as_array().unwrap().len(), 100_000);
    assert_eq!(parsed[99_999], 99_999);
}

#[tokio::test]
async fn a_10_mb_string_result_is_cut_and_spilled_whole() {
    let (h, _) = capped(20_000, true);
    let v = h.run("return 'ab'.repeat(5e6) + 'END'").await;
    let text = preview(&v);
    assert!(chars(&text) <= 20_000);
    let r = preview_result(&text);
    let r = r.as_str().unwrap();
    assert!(
        r.starts_with("abab") && r.ends_with("abEND"),
        "{}",
        &r[..40]
    );
    let dropped: usize = r
        .split_once("[… ")
        .and_then(|(_, m)| m.split_once(" characters"))
        .map(|(n, _)| n.parse().unwrap())
        .unwrap();
    assert_eq!(
        chars(r) - chars(&format!("[… {dropped} characters dropped …]")) + dropped,
        10_000_003
    );
    let path = v["spill"]["path"].as_str().unwrap();
    assert_eq!(std::fs::metadata(path).unwrap().len(), 10_000_003 + 11);
    assert_eq!(v["spill"]["bytes"], 10_000_014);
}

#[tokio::test]
async fn values_inside_the_program_are_never_capped() {
    let (h, cell) = capped(1_000, true);
    *cell.lock().unwrap() = json!("é".repeat(5_000_000));
    let r = h
        .ok("const s = await tools.give({}); [s.length, s.slice(-2), s === 'é'.repeat(5e6)]")
        .await;
    assert_eq!(r, json!([5_000_000, "éé", true]));
}

#[tokio::test]
async fn a_log_flood_streams_to_the_spill_and_keeps_head_and_tail() {
    let (h, _) = capped(20_000, true);
    let v = h
        .run("for (let i = 0; i < 200000; i++) console.log('line ' + i); return 'done'")
        .await;
    assert_eq!(v["status"], "ok");
    assert_eq!(v["result"], "done");
    let text = preview(&v);
    assert!(chars(&text) <= 20_000);
    let logs = log_texts(&v);
    let marker = logs.iter().position(|l| l.starts_with("[… ")).unwrap();
    for (i, l) in logs[..marker].iter().enumerate() {
        assert_eq!(*l, format!("line {i}"));
    }
    let tail = &logs[marker + 1..];
    for (i, l) in tail.iter().enumerate() {
        assert_eq!(*l, format!("line {}", 200_000 - tail.len() + i));
    }
    let dropped_lines = 200_000 - marker - tail.len();
    let dropped_chars: usize = (marker..200_000 - tail.len())
        .map(|i| format!("line {i}").len())
        .sum();
    assert_eq!(
        logs[marker],
        format!("[… {dropped_chars} characters and {dropped_lines} lines dropped …]")
    );
    // Nothing is lost: every line is in the spill, then the result.
    let full = std::fs::read_to_string(v["spill"]["path"].as_str().unwrap()).unwrap();
    let lines: Vec<&str> = full.lines().collect();
    assert_eq!(lines.len(), 200_001);
    assert_eq!(lines[123_456], "line 123456");
    assert_eq!(lines[200_000], "result: \"done\"");
}

/// Unhandled rejections logged when the program has ended count against the console limit
/// as `console.log` does (found by a hostile review: past the limit, the lines were dropped
/// and the run said `ok`).
#[tokio::test]
async fn unhandled_rejections_past_the_console_limit_end_the_run_with_a_clear_error() {
    let config = RunCodeConfig::default()
        .limits(Limits::default().max_console_bytes(1 << 20))
        .output_cap(5_000);
    let h = Harness::with_config(config);
    let e = h
        .err("const s = 'x'.repeat(1000); for (let i = 0; i < 2000; i++) Promise.reject(s); return 'done'")
        .await;
    assert_eq!(e["name"], "LimitError", "{e:#}");
    assert_eq!(
        e["message"],
        "the program's console output passed its limit of 1048576 bytes; the output up to there is kept"
    );
}

#[tokio::test]
async fn past_the_console_limit_the_run_ends_with_a_clear_error() {
    let config = RunCodeConfig::default()
        .limits(Limits::default().max_console_bytes(1 << 20))
        .output_cap(5_000);
    let h = Harness::with_config(config);
    let e = h
        .err("try { for (;;) console.log('x'.repeat(1000)) } catch (e) { return 'caught' }")
        .await;
    assert_eq!(e["name"], "LimitError");
    assert_eq!(
        e["message"],
        "the program's console output passed its limit of 1048576 bytes; the output up to there is kept"
    );
    let spill = std::fs::read_dir(h.spill.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let full = std::fs::read_to_string(spill.path()).unwrap();
    // 1 048 576 / 1 001 bytes per line: the 1 047 lines that fit, then the error.
    assert_eq!(full.lines().count(), 1_048);
    assert!(full.ends_with("error: LimitError: the program's console output passed its limit of 1048576 bytes; the output up to there is kept\n"));
}

#[tokio::test]
async fn logs_and_result_share_the_cap_and_a_huge_error_is_cut() {
    let (h, _) = capped(2_000, false);
    let v = h
        .run("for (let i = 0; i < 1000; i++) console.warn('w' + i); return {big: 'z'.repeat(5000), n: 1}")
        .await;
    let text = preview(&v);
    assert!(chars(&text) <= 2_000, "{}", chars(&text));
    assert!(text.starts_with("[warn] w0\n[warn] w1\n"), "{text}");
    assert!(
        text.contains("\n[warn] w999\nresult: {\"big\":\"zzz"),
        "{text}"
    );
    assert_eq!(preview_result(&text)["n"], 1);

    let e = h.err("throw new RangeError('bad '.repeat(10000))").await;
    let m = e["message"].as_str().unwrap();
    assert!(
        m.starts_with("bad bad") && m.contains(" characters dropped …]"),
        "{m}"
    );
    let text = preview(&h.run("throw new RangeError('bad '.repeat(10000))").await);
    assert!(chars(&text) <= 2_000);
    assert!(text.starts_with("error: RangeError: bad bad"), "{text}");
}

#[tokio::test]
async fn the_cli_spills_under_the_root_where_read_file_reads_it_back() {
    let root = tempfile::tempdir().unwrap();
    let program = root.path().join("p.ts");
    std::fs::write(
        &program,
        "for (let i = 0; i < 5000; i++) console.log(`row ${i}`);\nreturn 'ok'",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["run", program.to_str().unwrap(), "--root"])
        .arg(root.path())
        .args(["--output-cap", "2000"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(chars(text.trim_end()) <= 2_000, "{text}");
    let rel = text
        .split("read_file {\"path\": \"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_else(|| panic!("no read_file path in {text}"));
    assert!(rel.starts_with(".codemode/spill/run-"), "{rel}");
    // The model reads it back with read_file, through another run.
    let h = Harness::with_files(root.path());
    let r = h
        .ok(&format!(
            "const f = await tools.read_file({{path: {rel:?}, offset: 4001, limit: 2}}); [f.content, f.total_lines]"
        ))
        .await;
    assert_eq!(r, json!(["row 4000\nrow 4001\n", 5001]));
}

/// A JSON value with strings of any Unicode (emoji with modifiers included), nested a few
/// levels.
fn arb_json() -> impl Strategy<Value = Value> {
    let text = prop_oneof![
        "[a-z ]{0,40}",
        "\\PC{0,30}",
        Just("👍🏽👩‍👩‍👧‍👦é\n\"\\".to_owned()),
        (0usize..3000).prop_map(|n| "ab\u{1F44D}\u{1F3FD}".repeat(n)),
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        text.prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 400, 40, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..200).prop_map(Value::Array),
            prop::collection::vec(("[a-z]{1,8}", inner), 0..40)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Whatever the result and logs, the preview is within the cap, and its result parses
    /// back to the canonical value's result.
    #[test]
    fn a_preview_never_exceeds_the_cap_and_always_parses(
        result in arb_json(),
        logs in prop::collection::vec("\\PC{0,200}", 0..50),
        cap in 300usize..4000,
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (h, cell) = capped(cap, false);
        *cell.lock().unwrap() = json!({"result": result, "logs": logs});
        let v = rt.block_on(h.run(
            "const {result, logs} = await tools.give({}); for (const l of logs) console.log(l); return result"
        ));
        prop_assert_eq!(&v["status"], "ok");
        let text = preview(&v);
        prop_assert!(chars(&text) <= cap, "{} > {cap}: {text}", chars(&text));
        prop_assert_eq!(&preview_result(&text), &v["result"]);
        if v.get("spill").is_none() {
            prop_assert_eq!(&v["result"], &result);
        }
    }
}

#[tokio::test]
async fn limits_default_to_a_documented_disk_limit() {
    assert_eq!(Limits::default().max_console_bytes, 64 << 20);
    assert_eq!(RunCodeConfig::default().output_cap, 20_000);
    let spill = SpillConfig::default();
    assert!(spill.dir.ends_with("codemode/spill"));
    assert_eq!((spill.max_files, spill.max_bytes), (100, 512 << 20));
}

#[tokio::test]
async fn a_cap_too_small_for_the_notice_summarises_and_never_invents_a_value() {
    // The spill notice alone takes the whole cap: the result is summarised past the cap
    // rather than shown as an empty string the program never returned.
    let (h, _cell) = capped(50, true);
    let v = h
        .run("return {a: 1, b: 'x'.repeat(1000), c: [...Array(100).keys()]}")
        .await;
    assert_eq!(v["result"], "{… 3 keys}");
    assert!(v["spill"]["path"].is_string(), "{v:#}");
    let v = h.run("return 'y'.repeat(1000)").await;
    assert_eq!(
        v["result"],
        "yyyyyyyyyy[… 981 characters dropped …]yyyyyyyyy"
    );
    let (h, _cell) = capped(5, true);
    let v = h.run("return 12345678").await;
    assert_eq!(v["result"], 12345678);
}
