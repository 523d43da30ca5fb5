//! The JavaScript installed into every sandbox before the program (`js-prelude/`), in
//! order. Each file is the body of `function (host, internals) { … }`; together they make
//! one ES module, `codemode:prelude/prelude.js`, whose default export runs them in order.
//!
//! The modules are compiled to QuickJS bytecode once per process (the first run pays
//! for parsing) and every run loads the bytecode, which is what keeps a cold `run_code`
//! close to the cost of a bare engine.

use std::sync::OnceLock;

use rquickjs::module::WriteOptions;
use rquickjs::{Context, Ctx, Function, Module, Object, Runtime};

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

/// Loaded on first use (see [`load_inspect`]): (name, source), the body of
/// `function (P) { … }`.
pub(crate) const INSPECT: (&str, &str) = (
    "31_inspect.js",
    include_str!("../../js-prelude/31_inspect.js"),
);

fn module_name(file: &str) -> String {
    format!("codemode:prelude/{file}")
}

/// The compiled prelude: one module that runs every file of [`PRELUDE`] in order (one
/// module loads faster than seven), then the inspect module.
struct Compiled {
    prelude: Vec<u8>,
    inspect: Vec<u8>,
}

/// The source of the one module: each file in its own function, in order.
fn prelude_module() -> String {
    let mut out = String::from("export default function (host, internals) {\n");
    for (file, source) in PRELUDE {
        out.push_str("// ");
        out.push_str(file);
        out.push_str("\n(function () {");
        out.push_str(source);
        out.push_str("\n})();\n");
    }
    out.push_str("}\n");
    out
}

/// The bytecode of every prelude module, compiled on first use.
fn bytecode() -> Result<&'static Compiled, String> {
    static BYTECODE: OnceLock<Result<Compiled, String>> = OnceLock::new();
    BYTECODE
        .get_or_init(|| {
            let rt = Runtime::new().map_err(|e| e.to_string())?;
            let ctx = Context::full(&rt).map_err(|e| e.to_string())?;
            ctx.with(|ctx| {
                let compile = |file: &str, source: String| {
                    let module = Module::declare(ctx.clone(), module_name(file), source)
                        .map_err(|e| format!("{file}: {e}"))?;
                    module
                        .write(WriteOptions {
                            strip_source: true,
                            strip_debug: true,
                            ..WriteOptions::default()
                        })
                        .map_err(|e| format!("{file}: {e}"))
                };
                let prelude = compile("prelude.js", prelude_module())?;
                let inspect = compile(
                    INSPECT.0,
                    format!("export default function (P) {{{}\n}}", INSPECT.1),
                )?;
                Ok(Compiled { prelude, inspect })
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Loads one module from bytecode this process compiled and returns its default export.
fn run_module<'js>(ctx: &Ctx<'js>, bytes: &'static [u8]) -> rquickjs::Result<Function<'js>> {
    #[expect(
        unsafe_code,
        reason = "rquickjs marks loading bytecode unsafe; these bytes were written by Module::write in this process, by this engine build, from the prelude sources"
    )]
    // SAFETY: `bytes` is bytecode this process produced with `Module::write` (in
    // `bytecode`) from the same engine build, and it lives in a `static` for the life of
    // the process, as the ROM-data loading mode requires.
    let module = unsafe { Module::load(ctx.clone(), bytes)? };
    let (module, evaluated) = module.eval()?;
    evaluated.finish::<()>()?;
    module.get("default")
}

/// Loads the inspect module (31_inspect.js) with the primordials `P`; returns its
/// `{ formatArgs, inspect }`.
pub(crate) fn load_inspect<'js>(
    ctx: &Ctx<'js>,
    primordials: Object<'js>,
) -> rquickjs::Result<Object<'js>> {
    let compiled = bytecode()
        .map_err(|message| rquickjs::Error::new_loading_message("codemode:prelude", message))?;
    run_module(ctx, &compiled.inspect)?.call((primordials,))
}

/// Runs every prelude module with the host object; returns the internals object the
/// modules filled in.
pub(crate) fn load<'js>(ctx: &Ctx<'js>, host: Object<'js>) -> rquickjs::Result<Object<'js>> {
    let compiled = bytecode()
        .map_err(|message| rquickjs::Error::new_loading_message("codemode:prelude", message))?;
    let internals = Object::new(ctx.clone())?;
    run_module(ctx, &compiled.prelude)?.call::<_, ()>((host, internals.clone()))?;
    Ok(internals)
}

#[cfg(test)]
mod tests {
    use super::PRELUDE;

    #[test]
    fn every_prelude_file_on_disk_is_listed_in_order() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("js-prelude");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".js"))
            .collect();
        on_disk.sort();
        let mut listed: Vec<String> = PRELUDE.iter().map(|(n, _)| (*n).to_owned()).collect();
        listed.push(super::INSPECT.0.to_owned());
        listed.sort();
        assert_eq!(on_disk, listed);
    }

    #[test]
    fn the_prelude_compiles_to_bytecode() {
        let compiled = super::bytecode().unwrap();
        assert!(!compiled.prelude.is_empty());
        assert!(!compiled.inspect.is_empty());
    }
}
