//! (g) The MCP client against a server that answers with arbitrary JSON-RPC: a scripted
//! server (`tests/fuzz/fake_server.py`) answers each request the client sends with the
//! next reply the input makes (a result of any shape, an error, a line that is not JSON, a
//! reply with another id, notifications first). The script leans on what a real server
//! sends: an `initialize` result and a `tools/list` page of tools with arbitrary schemas.
//! Invariants: no panic; connecting ends within the start-up limit plus a margin; a
//! failure names the server; every listed tool can be called, and the call ends within its
//! timeout plus a margin.
#![no_main]

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use arbitrary::Arbitrary;
use codemode::Registry;
use codemode::mcp::{Connection, ServerConfig};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

#[derive(Arbitrary, Debug)]
enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
    Schema(SchemaKind),
}

#[derive(Arbitrary, Debug)]
enum SchemaKind {
    Object(Vec<(String, SchemaKind)>),
    String,
    Integer,
    Array(Box<SchemaKind>),
    Ref,
    AnyOf(Vec<SchemaKind>),
}

fn schema(kind: &SchemaKind, depth: u8) -> Value {
    if depth == 0 {
        return json!({});
    }
    match kind {
        SchemaKind::Object(props) => {
            let props: serde_json::Map<String, Value> = props
                .iter()
                .take(6)
                .map(|(k, v)| (k.clone(), schema(v, depth - 1)))
                .collect();
            json!({"type": "object", "properties": props})
        }
        SchemaKind::String => json!({"type": "string"}),
        SchemaKind::Integer => json!({"type": "integer"}),
        SchemaKind::Array(items) => json!({"type": "array", "items": schema(items, depth - 1)}),
        SchemaKind::Ref => json!({"$ref": "#/$defs/missing"}),
        SchemaKind::AnyOf(v) => {
            json!({"anyOf": v.iter().take(4).map(|s| schema(s, depth - 1)).collect::<Vec<_>>()})
        }
    }
}

fn value(j: &Json, depth: u8) -> Value {
    if depth == 0 {
        return Value::Null;
    }
    match j {
        Json::Null => Value::Null,
        Json::Bool(b) => json!(b),
        Json::Int(n) => json!(n),
        Json::Float(f) => json!(f),
        Json::Str(s) => json!(s),
        Json::Array(items) => Value::Array(items.iter().take(8).map(|i| value(i, depth - 1)).collect()),
        Json::Object(members) => Value::Object(
            members
                .iter()
                .take(8)
                .map(|(k, v)| (k.clone(), value(v, depth - 1)))
                .collect(),
        ),
        Json::Schema(kind) => schema(kind, depth),
    }
}

#[derive(Arbitrary, Debug)]
struct Tool {
    name: String,
    description: Option<String>,
    input: SchemaKind,
    output: Option<SchemaKind>,
}

#[derive(Arbitrary, Debug)]
enum Reply {
    Result(Json),
    Error(i32, String),
    Raw(String),
    OtherId(Json),
    Notify(String, Json),
    Initialize(Option<String>),
    Tools(Vec<Tool>, Option<String>),
    ToolResult { text: Vec<String>, error: bool, structured: Option<Json> },
}

fn reply(r: &Reply) -> Value {
    match r {
        Reply::Result(j) => json!({"result": value(j, 5)}),
        Reply::Error(code, message) => json!({"error": {"code": code, "message": message}}),
        Reply::Raw(text) => json!({"raw": text.replace('\n', " ")}),
        Reply::OtherId(id) => json!({"id": value(id, 2), "result": {}}),
        Reply::Notify(method, params) => {
            json!({"notify": {"method": method, "params": value(params, 3)}})
        }
        Reply::Initialize(version) => json!({"result": {
            "protocolVersion": version.clone().unwrap_or_else(|| "2025-06-18".into()),
            "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "fake", "version": "0"}
        }}),
        Reply::Tools(tools, cursor) => {
            let tools: Vec<Value> = tools
                .iter()
                .take(8)
                .map(|t| {
                    let mut tool = json!({"name": t.name, "inputSchema": schema(&t.input, 4)});
                    if let Some(d) = &t.description {
                        tool["description"] = json!(d);
                    }
                    if let Some(o) = &t.output {
                        tool["outputSchema"] = schema(o, 4);
                    }
                    tool
                })
                .collect();
            json!({"result": {"tools": tools, "nextCursor": cursor}})
        }
        Reply::ToolResult { text, error, structured } => {
            let content: Vec<Value> = text.iter().take(4).map(|t| json!({"type": "text", "text": t})).collect();
            let mut result = json!({"content": content, "isError": error});
            if let Some(s) = structured {
                result["structuredContent"] = value(s, 4);
            }
            json!({"result": result})
        }
    }
}

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    // libFuzzer's `main` is C's: unlike a Rust program's, it leaves SIGPIPE at its default,
    // which kills the process when the client writes to a server that has just exited (a
    // script that ends early). A Rust host has it ignored by the standard library at
    // start-up; the target does the same.
    // SAFETY: setting a signal's disposition to "ignore" touches no memory of this process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
});

const SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fake_server.py");

fuzz_target!(|replies: Vec<Reply>| {
    let script: Vec<Value> = replies.iter().take(12).map(reply).collect();
    let file = tempfile_path();
    std::fs::write(&file, serde_json::to_vec(&script).unwrap()).unwrap();
    let mut config = ServerConfig::stdio(
        "fake",
        "python3",
        vec![SERVER.to_owned(), file.display().to_string()],
    );
    config.startup_timeout = Duration::from_millis(1_000);
    config.call_timeout = Duration::from_millis(500);
    let registry = Registry::new();
    RUNTIME.block_on(async {
        let started = Instant::now();
        let connected = Connection::connect(config, &registry).await;
        assert!(started.elapsed() < Duration::from_secs(4), "start-up took {:?}", started.elapsed());
        match connected {
            Err(e) => assert_eq!(e.server, "fake"),
            Ok(connection) => {
                for tool in connection.tools() {
                    let started = Instant::now();
                    let _ = registry.call(&tool, json!({})).await;
                    assert!(started.elapsed() < Duration::from_secs(3), "{tool} took {:?}", started.elapsed());
                }
                let _ = connection.close().await;
            }
        }
    });
    let _ = std::fs::remove_file(&file);
});

/// A file of this process's own for the script.
fn tempfile_path() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("codemode-fuzz-mcp-{}.json", std::process::id()))
}
