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
        "90_lockdown.js",
        include_str!("../../js-prelude/90_lockdown.js"),
    ),
];

/// Loaded on first use (see `load_inspect`): (name, source), the body of
/// `function (P, engine) { … }`.
pub(crate) const INSPECT: (&str, &str) = (
    "31_inspect.js",
    include_str!("../../js-prelude/31_inspect.js"),
);

/// Loaded on first use (see `load_array_checks`): (name, source), the body of
/// `function (P) { … }`.
pub(crate) const ARRAY_CHECKS: (&str, &str) = (
    "36_array_checks.js",
    include_str!("../../js-prelude/36_array_checks.js"),
);

/// Loaded on first use (see `load_discovery`): (name, source), the body of
/// `function (P, engine) { … }`.
pub(crate) const DISCOVERY: (&str, &str) = (
    "22_discovery.js",
    include_str!("../../js-prelude/22_discovery.js"),
);

/// Loaded by a run that may pause (see `load_journal_clock`): (name, source), the body of
/// `function (P) { … }`.
pub(crate) const JOURNAL_CLOCK: (&str, &str) = (
    "41_journal_clock.js",
    include_str!("../../js-prelude/41_journal_clock.js"),
);

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

/// The bytecode of the prelude module, the inspect module, the array checks module, the
/// discovery module and the journal clock module, in that order, compiled by a fresh engine
/// (sources and debug information stripped).
fn compile_prelude() -> Result<[Vec<u8>; 5], String> {
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
        let prelude = compile("prelude.js", prelude_module())?;
        let inspect = compile(
            INSPECT.0,
            format!("export default function (P, engine) {{{}\n}}", INSPECT.1),
        )?;
        let array_checks = compile(
            ARRAY_CHECKS.0,
            format!("export default function (P) {{{}\n}}", ARRAY_CHECKS.1),
        )?;
        let discovery = compile(
            DISCOVERY.0,
            format!("export default function (P, engine) {{{}\n}}", DISCOVERY.1),
        )?;
        let journal_clock = compile(
            JOURNAL_CLOCK.0,
            format!("export default function (P) {{{}\n}}", JOURNAL_CLOCK.1),
        )?;
        Ok([prelude, inspect, array_checks, discovery, journal_clock])
    })
}
