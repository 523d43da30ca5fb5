//! test262 as a gate for the sandbox (issue 15, item 4): the sample in
//! `../shared/conformance/test262/` (beside the repository; see its README) runs twice, in
//! the plain engine (rquickjs with no prelude, each test wrapped as a program is wrapped)
//! and through `run_code`. A test that passes in the plain engine and fails in the sandbox
//! fails this test, unless `tests/test262-allow.txt` lists it with the reason it is by
//! design; an entry that passes again fails it too, so the list stays short and true.
//!
//! How a test runs follows test262's `INTERPRETING.md`: `harness/assert.js` and
//! `harness/sta.js` first, then its `includes` (and `doneprintHandle.js` for `flags:
//! [async]`, which pass by printing `Test262:AsyncTestComplete`); `onlyStrict` tests get
//! `"use strict";` first; `negative` tests pass when they throw the named error (`parse`
//! phase: before any of it runs). `print` is a function of the program text
//! (`console.log` in the sandbox, a host function's twin in the plain engine), the same
//! text in both.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use codemode::Registry;
use codemode::run_code::{Limits, RunCodeConfig, run_code_tool};
use rquickjs::context::EvalOptions;
use rquickjs::promise::PromiseState;
use rquickjs::{CatchResultExt, Context, Function, Object, Promise, Runtime, Value};
use serde_json::json;

/// Per test, in both engines: generous for a debug build.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The sandbox's default memory limit and a stack limit that fits a test thread, given to
/// both engines: the limits are by design, the gate is about what the sandbox changes
/// beyond them.
const MEMORY: usize = 64 << 20;
const STACK: usize = 512 << 10;

/// The conformance folder beside the repository.
fn conformance() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/test262")
}

/// What a test's front matter asks for.
#[derive(Default, Debug)]
struct Meta {
    includes: Vec<String>,
    flags: Vec<String>,
    /// (phase, error name)
    negative: Option<(String, String)>,
}

/// `[a, b]` or the `- a` lines that follow.
fn list(value: &str, rest: &mut std::iter::Peekable<std::str::Lines<'_>>) -> Vec<String> {
    let value = value.trim();
    if let Some(inner) = value.strip_prefix('[') {
        return inner
            .trim_end_matches(']')
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect();
    }
    let mut out = Vec::new();
    while let Some(line) = rest.peek() {
        match line.trim().strip_prefix("- ") {
            Some(item) => {
                out.push(item.trim().to_owned());
                rest.next();
            }
            None => break,
        }
    }
    out
}

fn meta(source: &str) -> Meta {
    let mut meta = Meta::default();
    let Some(start) = source.find("/*---") else {
        return meta;
    };
    let Some(len) = source[start..].find("---*/") else {
        return meta;
    };
    let yaml = &source[start + 5..start + len];
    let mut lines = yaml.lines().peekable();
    while let Some(line) = lines.next() {
        if line.starts_with(' ') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        match key {
            "includes" => meta.includes = list(value, &mut lines),
            "flags" => meta.flags = list(value, &mut lines),
            "negative" => {
                let (mut phase, mut kind) = (String::new(), String::new());
                while let Some(l) = lines.peek().filter(|l| l.starts_with(' ')) {
                    if let Some((k, v)) = l.trim().split_once(':') {
                        match k {
                            "phase" => phase = v.trim().to_owned(),
                            "type" => kind = v.trim().to_owned(),
                            _ => {}
                        }
                    }
                    lines.next();
                }
                meta.negative = Some((phase, kind));
            }
            _ => {}
        }
    }
    meta
}

/// A test as the program text both engines run, and its front matter.
fn program(root: &Path, test: &str) -> (String, Meta) {
    let source = std::fs::read_to_string(root.join("test").join(test))
        .unwrap_or_else(|e| panic!("{test}: {e}"));
    let meta = meta(&source);
    let mut text = String::new();
    if meta.flags.iter().any(|f| f == "onlyStrict") {
        text.push_str("\"use strict\";\n");
    }
    text.push_str("function print(message) { console.log(String(message)); }\n");
    let mut harness = vec!["assert.js".to_owned(), "sta.js".to_owned()];
    if meta.flags.iter().any(|f| f == "async") {
        harness.push("doneprintHandle.js".to_owned());
    }
    harness.extend(meta.includes.iter().cloned());
    for file in harness {
        let path = root.join("harness").join(&file);
        text.push_str(
            &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{test}: {file}: {e}")),
        );
        text.push('\n');
    }
    text.push_str(&source);
    (text, meta)
}

/// How one run of a test ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ended {
    /// It finished; these lines were printed.
    Ok(Vec<String>),
    /// It threw (before running, for a syntax error): the error's name and message.
    Threw(String, String),
}

fn passed(meta: &Meta, ended: &Ended) -> bool {
    match (&meta.negative, ended) {
        (Some((_, kind)), Ended::Threw(name, _)) => name == kind,
        (Some(_), Ended::Ok(_)) => false,
        (None, Ended::Ok(lines)) => {
            !meta.flags.iter().any(|f| f == "async")
                || lines.iter().any(|l| l == "Test262:AsyncTestComplete")
        }
        (None, Ended::Threw(..)) => false,
    }
}

/// The name and message of a thrown value.
fn error_of(value: &Value<'_>) -> (String, String) {
    let Some(object) = value.as_object() else {
        return ("(not an object)".into(), format!("{value:?}"));
    };
    let get = |key: &str| object.get::<_, String>(key).unwrap_or_default();
    (get("name"), get("message"))
}

/// The test in the plain engine: `(async function program() {` text `})()`, sloppy, at the
/// global scope, its jobs run until none are left.
fn plain(text: &str) -> Ended {
    let rt = Runtime::new().expect("a runtime");
    rt.set_memory_limit(MEMORY);
    rt.set_max_stack_size(STACK);
    let deadline = Instant::now() + TIMEOUT;
    rt.set_interrupt_handler(Some(Box::new(move || Instant::now() > deadline)));
    let ctx = Context::full(&rt).expect("a context");
    let printed = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let ended = ctx.with(|ctx| {
        let sink = printed.clone();
        let log = Function::new(ctx.clone(), move |m: String| sink.borrow_mut().push(m))
            .expect("a function");
        let console = Object::new(ctx.clone()).expect("an object");
        console.set("log", log).expect("console.log");
        ctx.globals().set("console", console).expect("console");
        let mut options = EvalOptions::default();
        options.global = true;
        options.strict = false;
        let code = format!("(async function program() {{{text}\n}})()");
        let promise: Promise<'_> = match ctx.eval_with_options(code, options).catch(&ctx) {
            Ok(p) => p,
            Err(e) => {
                return Some(match e {
                    rquickjs::CaughtError::Exception(e) => {
                        let (n, m) = error_of(&e.into_object().into_value());
                        Ended::Threw(n, m)
                    }
                    rquickjs::CaughtError::Value(v) => {
                        let (n, m) = error_of(&v);
                        Ended::Threw(n, m)
                    }
                    rquickjs::CaughtError::Error(e) => Ended::Threw("engine".into(), e.to_string()),
                });
            }
        };
        while ctx.execute_pending_job() {}
        match promise.state() {
            PromiseState::Resolved => None,
            PromiseState::Rejected => {
                let reason = promise
                    .result::<Value<'_>>()
                    .and_then(Result::err)
                    .map(|_| ctx.catch());
                let (n, m) = reason.as_ref().map(error_of).unwrap_or_default();
                Some(Ended::Threw(n, m))
            }
            PromiseState::Pending => Some(Ended::Threw("Pending".into(), String::new())),
        }
    });
    ended.unwrap_or_else(|| Ended::Ok(printed.borrow().clone()))
}

/// The test through `run_code`.
async fn sandboxed(registry: &Registry, text: &str) -> Ended {
    let v = registry
        .call("run_code", json!({ "code": text }))
        .await
        .into_result()
        .expect("run_code itself never fails");
    if v["status"] == "ok" {
        let lines = v["logs"]
            .as_array()
            .map(|l| {
                l.iter()
                    .filter_map(|e| e["text"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        Ended::Ok(lines)
    } else {
        let name = v["error"]["name"].as_str().unwrap_or_default().to_owned();
        let message = v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        Ended::Threw(name, message)
    }
}

/// `tests/test262-allow.txt`: test path → why its failure in the sandbox is by design.
fn allow_list() -> BTreeMap<String, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/test262-allow.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (test, why) = l
                .split_once(" # ")
                .unwrap_or_else(|| panic!("an allow-list entry says why: {l}"));
            (test.trim().to_owned(), why.trim().to_owned())
        })
        .collect()
}

#[test]
fn the_sandbox_passes_every_test262_test_the_plain_engine_passes() {
    let root = conformance();
    let sample = std::fs::read_to_string(root.join("sample.txt")).unwrap_or_else(|e| {
        panic!(
            "the test262 sample is read from {root:?} (the shared conformance folder beside the repository): {e}"
        )
    });
    let tests: Vec<&str> = sample
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::with_capacity(tests.len()));
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime");
                let registry = Registry::new();
                let config = RunCodeConfig::default()
                    .limits(Limits::default().timeout(TIMEOUT).stack(STACK))
                    .spill(None);
                let _handle = registry.register(run_code_tool(config)).expect("run_code");
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(test) = tests.get(i) else { break };
                    let (text, meta) = program(&root, test);
                    let in_plain = plain(&text);
                    let in_sandbox = runtime.block_on(sandboxed(&registry, &text));
                    let row = (
                        test.to_string(),
                        passed(&meta, &in_plain),
                        passed(&meta, &in_sandbox),
                        in_sandbox,
                    );
                    results.lock().unwrap().push(row);
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let allowed = allow_list();
    let plain_passes = results.iter().filter(|r| r.1).count();
    let regressions: Vec<_> = results.iter().filter(|r| r.1 && !r.2).collect();
    let unexpected: Vec<String> = regressions
        .iter()
        .filter(|r| !allowed.contains_key(&r.0))
        .map(|r| format!("{}: {:?}", r.0, r.3))
        .collect();
    let stale: Vec<&String> = allowed
        .keys()
        .filter(|t| !regressions.iter().any(|r| &&r.0 == t))
        .collect();
    eprintln!(
        "test262: {} tests, {} pass in the plain engine, {} of those fail in the sandbox ({} allowed), {:.1} s on {threads} threads",
        results.len(),
        plain_passes,
        regressions.len(),
        allowed.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        unexpected.is_empty(),
        "these pass in the plain engine and fail in the sandbox:\n{}",
        unexpected.join("\n")
    );
    assert!(
        stale.is_empty(),
        "allow-listed tests that no longer fail in the sandbox (remove them): {stale:?}"
    );
}
