//! Progressive discovery: above the token budget `run_code`'s description is an index of
//! the tools, and programs find tools with `tools.$search` and read them with
//! `tools.$describe`; the quality of the search over a fixture of task phrasings.

use codemode::declarations::ToolDecl;
use codemode::discovery::{DEFAULT_TOOL_BUDGET, search};
use codemode::run_code::RunCodeConfig;
use codemode::tokens::{Encoding, count_tokens};
use codemode::{FileTools, Registry, Tool, ToolHandle, tool_alias};
use serde_json::{Value, json};

use crate::support::Harness;

fn root() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Registers the built-in tools (all of them) and the three MCP fixtures' tools (answering
/// with their arguments) in `registry`.
fn register_everything(registry: &Registry, dir: &std::path::Path) -> Vec<ToolHandle> {
    let files = FileTools::new(dir).unwrap();
    let mut handles = files.register(registry).unwrap();
    handles.push(
        registry
            .register(codemode::web_fetch_tool(codemode::AllowedHosts::new([
                "example.com",
            ])))
            .unwrap(),
    );
    for tool in files.write_tools().into_iter().chain([files.shell_tool()]) {
        handles.push(registry.register(tool).unwrap());
    }
    for server in ["everything", "filesystem", "memory"] {
        let path = root().join(format!("tests/fixtures/mcp/server-{server}.json"));
        let list: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        handles.extend(codemode::bench_support::register_listed_tools(
            registry, server, &list,
        ));
    }
    handles
}

fn all_decls() -> (Vec<ToolDecl>, Registry, Vec<ToolHandle>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::new();
    let handles = register_everything(&registry, dir.path());
    (
        codemode::declarations::tool_decls(&registry),
        registry,
        handles,
        dir,
    )
}

#[test]
fn search_ranks_the_right_tool_in_its_top_3_for_at_least_90_percent_of_the_tasks() {
    let (tools, _registry, _handles, _dir) = all_decls();
    assert!(tools.len() >= 40, "{}", tools.len());
    let text = std::fs::read_to_string(root().join("tests/fixtures/discovery/tasks.json")).unwrap();
    let fixture: Value = serde_json::from_str(&text).unwrap();
    let tasks = fixture["tasks"].as_array().unwrap();
    assert!(tasks.len() >= 40);
    let mut misses = Vec::new();
    for t in tasks {
        let task = t["task"].as_str().unwrap();
        let want: Vec<&str> = t["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        for w in &want {
            assert!(
                tools.iter().any(|d| d.name == *w),
                "the fixture names no tool {w}"
            );
        }
        let top: Vec<&str> = search(&tools, task, 3)
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        if !top.iter().any(|n| want.contains(n)) {
            misses.push(format!("{task:?}: wanted {want:?}, got {top:?}"));
        }
    }
    let hit = 1.0 - misses.len() as f64 / tasks.len() as f64;
    println!(
        "top-3 hit rate: {:.1} % of {} tasks; misses: {misses:#?}",
        100.0 * hit,
        tasks.len()
    );
    assert!(
        hit >= 0.90,
        "top-3 hit rate {:.1} %: {misses:#?}",
        100.0 * hit
    );
}

fn run_code_description(registry: &Registry) -> String {
    registry.get("run_code").unwrap().description_in(registry)
}

#[tokio::test]
async fn above_the_budget_the_description_is_an_index_and_programs_discover_tools() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = Harness::new(Default::default());
    h.handles
        .extend(register_everything(&h.registry, dir.path()));

    // The whole description, with 44 tools, fits in 1 500 tokens, and names every tool.
    let text = run_code_description(&h.registry);
    let full =
        codemode::declarations::declarations(&h.registry, codemode::declarations::Layout::Compact)
            .unwrap();
    let (index_tokens, full_tokens) = (
        count_tokens(&text, Encoding::O200kBase),
        count_tokens(&full, Encoding::O200kBase),
    );
    println!(
        "run_code description: index {index_tokens} tokens; the full declarations would be {full_tokens}"
    );
    assert!(full_tokens > DEFAULT_TOOL_BUDGET);
    assert!(index_tokens <= 1_500, "{index_tokens}: {text}");
    assert!(!text.contains("interface ToolArgsMap"), "{text}");
    for t in codemode::declarations::tool_decls(&h.registry) {
        assert!(
            text.contains(&format!("- {}", t.name)),
            "{} missing: {text}",
            t.name
        );
    }
    assert!(text.contains("memory (MCP server):\n- memory.add_observations: Add new observations to existing entities in the knowledge graph\n"), "{text}");
    assert!(
        text.contains("tools.$search(") && text.contains("tools.$describe("),
        "{text}"
    );

    // Search, describe, then call a tool; and call one never described.
    let v = h.ok(r#"
        const found = await tools.$search("store the entity Alice in the knowledge graph", 3);
        const decl = await tools.$describe([found[0].name, "grep"]);
        const made = await tools["memory.create_entities"]({entities: [{name: "Alice", entityType: "person", observations: ["works at Acme"]}]});
        const summed = await tools.everything_get_sum({a: 1, b: 2});
        return {found, decl, made, summed, listed: Object.keys(tools).filter(k => k.startsWith("$"))};
    "#).await;
    assert_eq!(v["found"].as_array().unwrap().len(), 3);
    assert_eq!(v["found"][0]["name"], "memory.create_entities", "{v:#}");
    assert!(
        v["found"][0]["description"]
            .as_str()
            .unwrap()
            .starts_with("Create multiple new entities")
    );
    let decl = v["decl"].as_str().unwrap();
    let expected = {
        let tools: Vec<ToolDecl> = codemode::declarations::tool_decls(&h.registry)
            .into_iter()
            .filter(|t| t.name == "memory.create_entities" || t.name == "grep")
            .collect();
        codemode_codegen::declarations_with(&tools, codemode::declarations::Layout::Compact)
            .unwrap()
    };
    assert_eq!(decl, expected);
    assert!(
        decl.contains("\"memory.create_entities\": { entities: Entity[] }"),
        "{decl}"
    );
    assert_eq!(v["made"]["entities"][0]["name"], "Alice");
    assert_eq!(v["summed"], json!({"a": 1, "b": 2}));
    assert_eq!(v["listed"], json!([]));

    // A name that is no tool gets the closest one; bad arguments reject as a ToolCallError.
    let e = h
        .err(r#"await tools.$describe("memory.create_entity")"#)
        .await;
    assert_eq!(e["name"], "ToolCallError");
    assert!(
        e["message"].as_str().unwrap().contains(
            "unknown tool \"memory.create_entity\"; did you mean \"memory.create_entities\", \"memory.create_relations\" or \"memory.delete_entities\"?"
        ),
        "{e}"
    );
    let e = h.err(r#"await tools.$describe([])"#).await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("name at least one tool"),
        "{e}"
    );
    let e = h
        .err(r#"const a = []; a.length = 1e6; await tools.$describe(a)"#)
        .await;
    assert!(
        e["message"].as_str().unwrap().contains("at most 500"),
        "{e}"
    );
    // No words in common: nothing found. A limit past the most gives the most there are;
    // no limit gives the default.
    assert_eq!(
        h.ok(r#"return await tools.$search("zzzz qqqq")"#).await,
        json!([])
    );
    let matching = search(
        &codemode::declarations::tool_decls(&h.registry),
        "file",
        usize::MAX,
    )
    .len();
    assert!(
        matching > codemode::discovery::DEFAULT_SEARCH_LIMIT,
        "{matching}"
    );
    assert_eq!(
        h.ok(r#"return (await tools.$search("file", 1000)).length"#)
            .await,
        json!(matching.min(codemode::discovery::MAX_SEARCH_LIMIT))
    );
    assert_eq!(
        h.ok(r#"return (await tools.$search("file")).length"#).await,
        json!(codemode::discovery::DEFAULT_SEARCH_LIMIT)
    );
    // Neither search nor describe is a call.
    let v = h
        .run(r#"await tools.$search("file"); await tools.$describe("grep"); return 1"#)
        .await;
    assert_eq!(v["calls"], json!([]));
}

#[tokio::test]
async fn below_the_budget_every_tool_is_declared_and_the_budget_is_configurable() {
    let dir = tempfile::tempdir().unwrap();
    let with_files = |config: RunCodeConfig| {
        let mut h = Harness::with_config(config);
        h.handles.extend(
            FileTools::new(dir.path())
                .unwrap()
                .register(&h.registry)
                .unwrap(),
        );
        h
    };
    let h = with_files(RunCodeConfig::default());
    let text = run_code_description(&h.registry);
    assert!(text.contains("interface ToolArgsMap"), "{text}");
    assert!(!text.contains("tools.$search("), "{text}");
    // The same tools over a budget of 10 tokens: the index.
    let h = with_files(RunCodeConfig::default().tool_budget(10));
    let text = run_code_description(&h.registry);
    assert!(!text.contains("interface ToolArgsMap"), "{text}");
    assert!(text.contains("tools:\n- glob: "), "{text}");
    // Discovery works below the budget too.
    assert_eq!(
        h.ok(r#"return (await tools.$search("regular expression search in files", 1))[0].name"#)
            .await,
        "grep"
    );
}

#[test]
fn no_tool_can_take_the_names_of_the_discovery_functions() {
    let registry = Registry::new();
    for name in ["$search", "$describe"] {
        let err = registry
            .register(
                Tool::builder(name)
                    .execute(|_a, _e| async { Ok(json!(1)) })
                    .build()
                    .unwrap(),
            )
            .unwrap_err();
        assert!(err.to_string().contains("tool discovery"), "{err}");
    }
    // A name whose alias would be one of them is refused too.
    assert_eq!(tool_alias("$search"), "$search");
}

#[tokio::test]
async fn argument_errors_and_unknown_tools_teach_at_run_time_and_in_check() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::with_files(dir.path());
    let e = h
        .err(r#"await tools.grep({pattern: "x", max_results: "ten"})"#)
        .await;
    assert_eq!(
        e["message"],
        "grep: invalid arguments for grep:\nargs.max_results: expected integer, got string — max_results?: integer /* Most matches to return. Default: 1000. @minimum 1 @default 1000 */"
    );
    let e = h.err(r#"await tools.grpe({pattern: "x"})"#).await;
    assert_eq!(e["name"], "ToolCallError");
    // Where the program named the unknown tool, on the first line or a later one, also
    // when the error is caught and thrown again.
    assert_eq!((&e["line"], &e["column"]), (&json!(1), &json!(7)));
    let later = h
        .err("const pattern = \"x\";\nconst found = await tools.grpe({ pattern });")
        .await;
    assert_eq!((&later["line"], &later["column"]), (&json!(2), &json!(21)));
    let rethrown = h
        .err(
            "let kept;\ntry {\n  await tools.grpe({});\n} catch (e) {\n  kept = e;\n}\nthrow kept;",
        )
        .await;
    assert_eq!(
        (&rethrown["line"], &rethrown["column"]),
        (&json!(3), &json!(9))
    );
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("unknown tool \"grpe\"; did you mean \"grep\"?"),
        "{message}"
    );
    assert!(
        message.ends_with("Search by words with `await tools.$search(\"…\")`"),
        "{message}"
    );

    // `codemode check` says the same without running anything.
    let report = codemode::check::check_program(
        r#"await tools.grep({pattern: "x", max_results: "ten"}); await tools.grpe({})"#,
        &h.registry,
    );
    let text: Vec<String> = report.iter().map(|d| d.message.clone()).collect();
    assert_eq!(text.len(), 2, "{text:?}");
    assert!(text[0].ends_with("— max_results?: integer /* Most matches to return. Default: 1000. @minimum 1 @default 1000 */"), "{text:?}");
    assert!(
        text[1].contains("did you mean \"grep\"?") && text[1].contains("tools.$search"),
        "{text:?}"
    );
}

/// Found by a hostile review: inputs that cost the host time or memory, or that a program
/// tampered with, end in a clear error at once.
#[tokio::test]
async fn discovery_refuses_costly_or_tampered_input_with_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::with_files(dir.path());
    let message = |e: Value| e["message"].as_str().unwrap().to_owned();
    // A name longer than any tool name is refused before any comparison.
    let m = message(h.err(r#"await tools.$describe("x".repeat(1e6))"#).await);
    assert_eq!(
        m,
        "$describe: no tool has a name of length 1000000: tool names have at most 128 characters"
    );
    // Reading a huge unknown name from `tools` quotes its start and length only.
    let m = message(h.err(r#"await tools["y".repeat(1e6)]({})"#).await);
    assert!(m.starts_with("yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy…: unknown tool \"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\"… (1000000 characters); available tools: read_file"), "{}", &m[..200.min(m.len())]);
    assert!(m.len() < 400, "{}", m.len());
    // Queries are bounded, limits and names checked.
    let m = message(
        h.err(r#"await tools.$search("read file ".repeat(1e5))"#)
            .await,
    );
    assert_eq!(m, "$search: a query's length is at most 1000");
    for (call, says) in [
        ("tools.$search()", "expected the query as a string of words"),
        (
            "tools.$search('file', 0)",
            "limit: expected a number of results, 1 or more",
        ),
        (
            "tools.$search('file', NaN)",
            "limit: expected a number of results, 1 or more",
        ),
        (
            "tools.$search('file', '3')",
            "limit: expected a number of results, 1 or more",
        ),
        (
            "tools.$describe([['read_file', 'grep']])",
            "expected a tool name (a string)",
        ),
        (
            "tools.$describe('\\uD800')",
            "a tool name is not valid Unicode (it has a lone surrogate)",
        ),
        (
            "tools.$search('\\uD800')",
            "the query is not valid Unicode (it has a lone surrogate)",
        ),
    ] {
        let m = message(h.err(&format!("await {call}")).await);
        assert!(m.contains(says), "{call}: {m}");
    }
    let matching = search(&codemode::declarations::tool_decls(&h.registry), "file", 50).len();
    assert!(matching >= 2);
    assert_eq!(
        h.ok("return (await tools.$search('file', Infinity)).length")
            .await,
        json!(matching)
    );
    // A lone surrogate in a tool's name is an unknown tool, not an engine error.
    let e = h.err(r#"await tools["read_file\uD800"]({})"#).await;
    assert_eq!(e["name"], "ToolCallError", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("unknown tool \"read_file\u{fffd}\""),
        "{e}"
    );
    // A name asked for twice is answered once.
    let m = message(
        h.err(r#"await tools.$describe(["nope", "nope", "grpe"])"#)
            .await,
    );
    assert!(m.starts_with("$describe: unknown tool \"nope\". unknown tool \"grpe\"; did you mean \"grep\"? Available tools: "), "{m}");
    // Many unknown names: each named once, the tools listed once.
    let m = message(
        h.err(r#"await tools.$describe(Array.from({length: 400}, (_, i) => "nope" + i))"#)
            .await,
    );
    assert!(
        m.contains(
            "unknown tool \"nope9\". And 390 more unknown names. Available tools: read_file"
        ),
        "{m}"
    );
    assert!(m.len() < 1_000, "{}", m.len());
    // A program's own globals and prototypes do not reach the discovery functions.
    let v = h
        .ok(r#"
            Number = () => ({});
            String = () => "tampered";
            Object.defineProperty(Array.prototype, "0", {set() {}, get() { return "ARR0"; }, configurable: true});
            const found = await tools.$search("regular expression", 1);
            const d = await tools.$describe(["grep"]);
            return [found.length, d.includes("grep: {")];
        "#)
        .await;
    assert_eq!(v, json!([1, true]));
    // The discovery functions load at their first call: built-ins a program replaced
    // before it do not reach them either.
    let v = h
        .ok(r#"
            const isArray = Array.isArray;
            Error = function () { return { message: "tampered Error" }; };
            Array.isArray = () => false;
            Object.defineProperty = () => { throw new TypeError("tampered defineProperty"); };
            Promise.resolve = () => "tampered resolve";
            Promise.reject = () => "tampered reject";
            const d = await tools.$describe(["grep"]);
            let refused;
            try { await tools.$search(42); } catch (e) { refused = [e.name, e.toolName, e.message]; }
            const found = await tools.$search("regular expression", 1);
            return [d.includes("grep: {"), refused, isArray(found), found.length];
        "#)
        .await;
    assert_eq!(
        v,
        json!([
            true,
            [
                "ToolCallError",
                "$search",
                "expected the query as a string of words"
            ],
            true,
            1
        ])
    );
    // The host's own refusals (an unknown name, a lone surrogate) keep their text when a
    // program froze `Error.prototype` or put a `message` accessor on it.
    for tamper in [
        "Object.freeze(Error.prototype);",
        r#"Object.defineProperty(Error.prototype, "message", {get() { return "program's text"; }, set(v) {}, configurable: true});"#,
    ] {
        let v = h
            .ok(&format!(
                r#"{tamper}
            const out = [];
            for (const call of [() => tools.$describe("nope"), () => tools.$search("read \uD800")]) {{
              try {{ await call(); out.push("resolved"); }} catch (e) {{ out.push(e.toolName + ": " + e.message); }}
            }}
            return out;"#
            ))
            .await;
        assert_eq!(
            v,
            json!([
                "$describe: unknown tool \"nope\". Available tools: read_file, list_dir, glob, grep",
                "$search: the query is not valid Unicode (it has a lone surrogate)"
            ]),
            "{tamper}"
        );
    }
}

#[test]
fn check_and_run_agree_on_closed_roots_proto_keys_repeated_keys_and_unions() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::new();
    let params = |schema: Value| {
        codemode::schema::ParameterSchema::from_json_schema(&schema)
            .unwrap()
            .0
    };
    let tool = |name: &str, schema: Value| {
        Tool::builder(name)
            .parameters(params(schema))
            .execute(|_a, _e| async { Ok(json!(1)) })
            .build()
            .unwrap()
    };
    let _handles = [
        registry.register(tool("closed", json!({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": false}))).unwrap(),
        registry.register(tool("point", json!({"type": "object", "properties": {"at": {"$ref": "#/$defs/Point"}}, "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]}}}))).unwrap(),
        registry.register(tool("either", json!({"type": "object", "properties": {"v": {"anyOf": [{"type": "string"}, {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}]}}}))).unwrap(),
    ];
    let _files = FileTools::new(dir.path())
        .unwrap()
        .register(&registry)
        .unwrap();
    let check = |code: &str| -> Vec<String> {
        codemode::check::check_program(code, &registry)
            .into_iter()
            .map(|d| d.message)
            .collect()
    };
    // A closed root refuses other keys in check as at run time.
    assert_eq!(
        check("await tools.closed({a: 1, extra: 2})"),
        ["args: unknown key \"extra\". The object takes key \"a\"."]
    );
    // `__proto__: x` makes no key; of a repeated key only the last value counts.
    assert_eq!(
        check("await tools.closed({a: 1, __proto__: null})"),
        Vec::<String>::new()
    );
    assert_eq!(
        check("await tools.point({at: {x: 1, y: 2, __proto__: {}}})"),
        Vec::<String>::new()
    );
    assert_eq!(
        check("await tools.either({v: {x: 1, __proto__: null}})"),
        Vec::<String>::new()
    );
    assert_eq!(
        check("await tools.grep({pattern: 'x', max_results: '5', max_results: 5})"),
        Vec::<String>::new()
    );
    // A hint whose type is named by a reference carries that type's definition.
    let got = check("await tools.point({at: 'here'})");
    assert_eq!(got.len(), 1);
    assert!(
        got[0].ends_with("— at?: ArgPoint; type ArgPoint = { x: number; y: number }"),
        "{got:?}"
    );
    // A union's closest branch is followed by its reason, with the hint on the reason.
    let got = check("await tools.either({v: {x: 'no'}})");
    assert_eq!(got.len(), 1);
    assert!(
        got[0].contains(":") && got[0].ends_with("— x: integer"),
        "{got:?}"
    );
}

#[test]
fn the_typescript_compiler_knows_the_discovery_functions_from_the_declarations() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::new();
    let _files = FileTools::new(dir.path())
        .unwrap()
        .register(&registry)
        .unwrap();
    let d = codemode::declarations::declarations(&registry, codemode::declarations::Layout::Pretty)
        .unwrap();
    let good = "async function good() {\n  const found: { name: string; description: string }[] = await tools.$search(\"find files\", 3);\n  const text: string = await tools.$describe(found.map((t) => t.name));\n  return [text, await tools.$describe(\"grep\")];\n}\n";
    let bad = "async function bad() {\n  await tools.$search(42);\n}\n";
    let (_, diagnostics) = crate::support::tsc(&[
        ("tools.d.ts", &d),
        ("globals.d.ts", codemode::declarations::SANDBOX_GLOBALS),
        ("good.ts", good),
        ("bad.ts", bad),
    ]);
    let lines: Vec<&str> = diagnostics.lines().collect();
    assert_eq!(lines.len(), 1, "{diagnostics}");
    assert!(
        lines[0].starts_with("bad.ts(2,23): error TS2345:"),
        "{diagnostics}"
    );
}
