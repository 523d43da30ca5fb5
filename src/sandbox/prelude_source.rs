// The prelude's sources and how they compile to QuickJS bytecode: shared, through
// `include!`, by the crate (`sandbox/prelude.rs`) and its build script (`src/build.rs`),
// which compiles them once at build time. Plain items only: no attributes, no `use` of the
// crate.

/// The prelude files, in load order: (name, source).
pub(crate) const PRELUDE: &[(&str, &str)] = &[
    (
        "00_primordials.js",
        include_str!("../../js-prelude/00_primordials.js"),
    ),
    ("10_host.js", include_str!("../../js-prelude/10_host.js")),
    ("20_tools.js", include_str!("../../js-prelude/20_tools.js")),
    (
        "30_console.js",
        include_str!("../../js-prelude/30_console.js"),
    ),
    (
        "35_guards.js",
        include_str!("../../js-prelude/35_guards.js"),
    ),
    (
        "40_timers.js",
        include_str!("../../js-prelude/40_timers.js"),
    ),
    (
        "90_run_default.js",
        include_str!("../../js-prelude/90_run_default.js"),
    ),
];

/// The modules loaded only when a run first needs them (see `Lazy` in
/// `sandbox/prelude.rs`, which names them in this order): (name, parameters, source), each
/// the body of `function (parameters) { … }`.
pub(crate) const LAZY: &[(&str, &str, &str)] = &[
    (
        "22_discovery.js",
        "P, engine",
        include_str!("../../js-prelude/22_discovery.js"),
    ),
    (
        "31_inspect.js",
        "P, engine",
        include_str!("../../js-prelude/31_inspect.js"),
    ),
    (
        "36_array_checks.js",
        "P",
        include_str!("../../js-prelude/36_array_checks.js"),
    ),
    (
        "41_journal_clock.js",
        "P",
        include_str!("../../js-prelude/41_journal_clock.js"),
    ),
    (
        "42_timer_table.js",
        "P, engine",
        include_str!("../../js-prelude/42_timer_table.js"),
    ),
];

fn module_name(file: &str) -> String {
    format!("codemode:prelude/{file}")
}

/// The source of the one prelude module: the first file (the primordials) as the top of
/// the exported function, so its constants are in scope in every later file, and each later
/// file in its own block inside it, in order (a block, not a function: its names stay its
/// own, and the run makes no function object for it).
fn prelude_module() -> String {
    let mut out = String::from("export default function (host, internals) {\n");
    for (i, (file, source)) in PRELUDE.iter().enumerate() {
        out.push_str("// ");
        out.push_str(file);
        if i == 0 {
            out.push('\n');
            out.push_str(source);
            out.push('\n');
            continue;
        }
        out.push_str("\n{");
        out.push_str(source);
        out.push_str("\n}\n");
    }
    out.push_str("}\n");
    out
}

/// The bytecode of the prelude module, then of each module of [`LAZY`] in its order,
/// compiled by a fresh engine (sources and debug information stripped).
fn compile_prelude() -> Result<Vec<Vec<u8>>, String> {
    let rt = rquickjs::Runtime::new().map_err(|e| e.to_string())?;
    let ctx = rquickjs::Context::full(&rt).map_err(|e| e.to_string())?;
    ctx.with(|ctx| {
        let compile = |file: &str, source: String| {
            let module = rquickjs::Module::declare(ctx.clone(), module_name(file), source)
                .map_err(|e| format!("{file}: {e}"))?;
            module
                .write(rquickjs::module::WriteOptions {
                    strip_source: true,
                    strip_debug: true,
                    ..rquickjs::module::WriteOptions::default()
                })
                .map_err(|e| format!("{file}: {e}"))
        };
        let mut modules = vec![compile("prelude.js", prelude_module())?];
        for (file, parameters, source) in LAZY {
            modules.push(compile(
                file,
                format!("export default function ({parameters}) {{{source}\n}}"),
            )?);
        }
        Ok(modules)
    })
}
