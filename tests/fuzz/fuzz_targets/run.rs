//! (f) Whole `run_code` runs of generated programs, structure-aware: a generator of
//! JavaScript that calls tools (one that echoes, one that fails, one that waits for its
//! signal, one that returns a megabyte), throws, loops (some forever), allocates,
//! recurses, races promises and sets timers, with values that cross the boundary both ways
//! (big integers, cycles, `undefined`, `-0`). Each run has a 300 ms deadline and 32 MiB.
//! Invariants: no panic or abort; the run ends within its deadline plus a margin; the
//! canonical value is `ok` or `error`; the model-facing text is within the cap.
#![no_main]

use std::fmt::Write as _;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use arbitrary::Arbitrary;
use codemode::Registry;
use codemode::run_code::{Limits, RunCodeConfig, render_text, run_code_tool};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum ToolName {
    Echo,
    Fail,
    Wait,
    Big,
    Unknown,
}

impl ToolName {
    fn js(self) -> &'static str {
        match self {
            ToolName::Echo => "tools.echo",
            ToolName::Fail => "tools.fail",
            ToolName::Wait => "tools.wait",
            ToolName::Big => "tools.big",
            ToolName::Unknown => "tools.nope",
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Expr {
    Int(i32),
    Big(u64),
    Float(f64),
    NegZero,
    Str(String),
    Undefined,
    Array(Vec<Expr>),
    Object(Vec<(String, Expr)>),
    Cycle,
    Call(ToolName, Box<Expr>),
    Random,
    Now,
    Var(u8),
}

#[derive(Arbitrary, Debug)]
enum Stmt {
    Let(u8, Expr),
    Await(ToolName, Expr),
    Throw(Expr),
    ThrowString,
    Log(Expr),
    Loop(u8, Vec<Stmt>),
    Forever,
    Alloc(u32),
    Recurse(u16),
    All(Vec<(ToolName, Expr)>),
    Race(Vec<(ToolName, Expr)>),
    Try(Vec<Stmt>, Vec<Stmt>),
    Timer(u16, Vec<Stmt>),
    Return(Expr),
}

/// JavaScript for `expr`, nesting cut at `depth`.
fn expr(out: &mut String, e: &Expr, depth: u8) {
    if depth == 0 {
        out.push('0');
        return;
    }
    match e {
        Expr::Int(n) => {
            let _ = write!(out, "{n}");
        }
        Expr::Big(n) => {
            let _ = write!(out, "{n}n * 1000000n");
        }
        Expr::Float(f) if f.is_finite() => {
            let _ = write!(out, "{f:?}");
        }
        Expr::Float(_) => out.push_str("NaN"),
        Expr::NegZero => out.push_str("-0"),
        Expr::Str(s) => {
            let _ = write!(
                out,
                "{}",
                serde_json::Value::String(s.chars().take(64).collect())
            );
        }
        Expr::Undefined => out.push_str("undefined"),
        Expr::Array(items) => {
            out.push('[');
            for item in items.iter().take(8) {
                expr(out, item, depth - 1);
                out.push(',');
            }
            out.push(']');
        }
        Expr::Object(members) => {
            out.push('{');
            for (k, v) in members.iter().take(8) {
                let key: String = k.chars().take(16).collect();
                let _ = write!(out, "{}: ", serde_json::Value::String(key));
                expr(out, v, depth - 1);
                out.push(',');
            }
            out.push('}');
        }
        Expr::Cycle => out.push_str("(() => { const o = {}; o.o = o; return o })()"),
        Expr::Call(tool, arg) => {
            let _ = write!(out, "(await {}(", tool.js());
            expr(out, arg, depth - 1);
            out.push_str(").catch(e => String(e)))");
        }
        Expr::Random => out.push_str("Math.random()"),
        Expr::Now => out.push_str("Date.now()"),
        Expr::Var(n) => {
            let _ = write!(out, "(typeof v{} === 'undefined' ? 1 : v{})", n % 4, n % 4);
        }
    }
}

fn call(out: &mut String, tool: ToolName, arg: &Expr, depth: u8) {
    let _ = write!(out, "{}({{a: ", tool.js());
    expr(out, arg, depth);
    out.push_str("})");
}

/// JavaScript for `stmts`, nesting cut at `depth`, at most 12 statements a block.
fn block(out: &mut String, stmts: &[Stmt], depth: u8) {
    if depth == 0 {
        return;
    }
    for s in stmts.iter().take(12) {
        match s {
            Stmt::Let(n, e) => {
                let _ = write!(out, "var v{} = ", n % 4);
                expr(out, e, 4);
            }
            Stmt::Await(tool, e) => {
                out.push_str("await ");
                call(out, *tool, e, 4);
            }
            Stmt::Throw(e) => {
                out.push_str("throw ");
                expr(out, e, 3);
            }
            Stmt::ThrowString => out.push_str("throw 'x'"),
            Stmt::Log(e) => {
                out.push_str("console.log(");
                expr(out, e, 4);
                out.push(')');
            }
            Stmt::Loop(n, body) => {
                let _ = write!(out, "for (let i = 0; i < {}; i++) {{", n % 50);
                block(out, body, depth - 1);
                out.push('}');
            }
            Stmt::Forever => out.push_str("while (true) {}"),
            Stmt::Alloc(n) => {
                let _ = write!(out, "globalThis.keep = 'x'.repeat({})", n % 100_000_000);
            }
            Stmt::Recurse(n) => {
                let _ = write!(
                    out,
                    "(function f(k) {{ return k <= 0 ? 0 : 1 + f(k - 1) }})({})",
                    u32::from(*n) * 4
                );
            }
            Stmt::All(calls) | Stmt::Race(calls) => {
                let how = if matches!(s, Stmt::All(_)) {
                    "allSettled"
                } else {
                    "race"
                };
                let _ = write!(out, "await Promise.{how}([");
                for (tool, e) in calls.iter().take(16) {
                    call(out, *tool, e, 3);
                    out.push(',');
                }
                out.push_str("]).catch(() => 0)");
            }
            Stmt::Try(body, handler) => {
                out.push_str("try {");
                block(out, body, depth - 1);
                out.push_str("} catch (e) {");
                block(out, handler, depth - 1);
                out.push('}');
            }
            Stmt::Timer(ms, body) => {
                let _ = write!(out, "setTimeout(async () => {{");
                block(out, body, depth - 1);
                let _ = write!(out, "}}, {})", ms % 200);
            }
            Stmt::Return(e) => {
                out.push_str("return ");
                expr(out, e, 4);
            }
        }
        out.push_str(";\n");
    }
}

struct Host {
    runtime: tokio::runtime::Runtime,
    registry: Registry,
}

const DEADLINE: Duration = Duration::from_millis(300);

static HOST: LazyLock<Host> = LazyLock::new(|| {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let registry = Registry::new();
    let limits = Limits::default()
        .timeout(DEADLINE)
        .memory(32 << 20)
        .max_tool_calls(500);
    let config = RunCodeConfig::default().limits(limits).spill(None);
    let tool = |name: &str| codemode::Tool::builder(name);
    let tools = [
        run_code_tool(config),
        tool("echo")
            .execute(|args, _e| async move { Ok((*args).clone()) })
            .build()
            .unwrap(),
        tool("fail")
            .execute(|_a, _e| async { Err(codemode::ToolError::new("it failed")) })
            .build()
            .unwrap(),
        tool("wait")
            .execute(|_a, exec| async move {
                exec.signal().cancelled().await;
                Ok(json!(null))
            })
            .build()
            .unwrap(),
        tool("big")
            .execute(|_a, _e| async { Ok(json!("y".repeat(1 << 20))) })
            .build()
            .unwrap(),
    ];
    for t in tools {
        registry.register(t).unwrap().forget();
    }
    Host { runtime, registry }
});

fuzz_target!(|program: Vec<Stmt>| {
    codemode::bench_support::tolerate_parser_assertions();
    let mut code = String::new();
    block(&mut code, &program, 4);
    let host = &*HOST;
    let started = Instant::now();
    let outcome = host
        .runtime
        .block_on(host.registry.call("run_code", json!({"code": code})));
    let took = started.elapsed();
    assert!(
        took < DEADLINE + Duration::from_secs(3),
        "the run took {took:?}:\n{code}"
    );
    let value = outcome.into_result().expect("run_code answers");
    let status = value["status"].as_str().unwrap_or_default();
    assert!(status == "ok" || status == "error", "{value}");
    assert!(render_text(&value).chars().count() <= 20_000, "{code}");
});
