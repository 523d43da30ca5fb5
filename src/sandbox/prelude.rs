//! The JavaScript installed into every sandbox before the program (`js-prelude/`), in
//! order. Each file is the body of `function (host, internals) { … }`; together they make
//! one ES module, `codemode:prelude/prelude.js`, whose default export runs them in order.
//!
//! The modules are compiled to QuickJS bytecode at build time (`src/build.rs`, with the
//! same engine version), or once per process where the build could not (the first run
//! then pays for parsing); every run loads the bytecode, which is what keeps a cold
//! `run_code`, and a whole `codemode run`, close to the cost of a bare engine.

use std::sync::OnceLock;

use rquickjs::{Ctx, Function, Module, Object, Value};

include!("prelude_source.rs");

/// Bytecode the build script compiled from the same sources with the same engine version
/// (empty when it could not: a cross build, or a failure it reported as a warning).
static BUILT_PRELUDE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/prelude.bc"));
static BUILT_INSPECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/inspect.bc"));

/// The prelude's bytecode: the prelude module and the inspect module.
struct Compiled {
    prelude: &'static [u8],
    inspect: &'static [u8],
}

/// The bytecode of every prelude module: the build script's, or compiled on first use.
fn bytecode() -> Result<&'static Compiled, String> {
    static BYTECODE: OnceLock<Result<Compiled, String>> = OnceLock::new();
    BYTECODE
        .get_or_init(|| {
            if !BUILT_PRELUDE.is_empty() && !BUILT_INSPECT.is_empty() {
                return Ok(Compiled {
                    prelude: BUILT_PRELUDE,
                    inspect: BUILT_INSPECT,
                });
            }
            let (prelude, inspect) = compile_prelude()?;
            Ok(Compiled {
                prelude: prelude.leak(),
                inspect: inspect.leak(),
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Loads one module from the prelude's bytecode and returns its default export.
fn run_module<'js>(ctx: &Ctx<'js>, bytes: &'static [u8]) -> rquickjs::Result<Function<'js>> {
    #[expect(
        unsafe_code,
        reason = "rquickjs marks loading bytecode unsafe; these bytes were written by Module::write from the prelude sources, by this engine version"
    )]
    // SAFETY: `bytes` is bytecode `Module::write` produced from the prelude sources (in
    // `compile_prelude`), by this process or by the build script with the same engine
    // version (Cargo.lock pins rquickjs for both; a test checks that both write the same
    // bytes), and it lives for the life of the process, as the ROM-data loading mode
    // requires.
    let module = unsafe { Module::load(ctx.clone(), bytes)? };
    let (module, evaluated) = module.eval()?;
    evaluated.finish::<()>()?;
    module.get("default")
}

/// Loads the inspect module (31_inspect.js) with the primordials `P` and the engine's own
/// checks, which JavaScript cannot make without running program code (a proxy's traps, a
/// `Symbol.toStringTag` getter, `Symbol.hasInstance`): `{ proxyTarget(value), isError(value),
/// isPromise(value) }`. `proxyTarget` gives a proxy's target (`null` once revoked) and
/// `undefined` for anything else. Returns the module's `{ formatArgs, inspect }`.
pub(crate) fn load_inspect<'js>(
    ctx: &Ctx<'js>,
    primordials: Object<'js>,
) -> rquickjs::Result<Object<'js>> {
    let compiled = bytecode()
        .map_err(|message| rquickjs::Error::new_loading_message("codemode:prelude", message))?;
    let engine = Object::new(ctx.clone())?;
    engine.set(
        "proxyTarget",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, value: Value<'js>| -> Value<'js> {
                let Some(proxy) = value.into_proxy() else {
                    return Value::new_undefined(ctx);
                };
                match proxy.target() {
                    Ok(target) => target.into_value(),
                    Err(_) => {
                        // Revoked: the engine's TypeError is dropped, not left pending.
                        let _ = ctx.catch();
                        Value::new_null(ctx)
                    }
                }
            },
        )?,
    )?;
    engine.set(
        "isError",
        Function::new(ctx.clone(), |value: Value<'js>| value.is_error())?,
    )?;
    engine.set(
        "isPromise",
        Function::new(ctx.clone(), |value: Value<'js>| value.is_promise())?,
    )?;
    run_module(ctx, compiled.inspect)?.call((primordials, engine))
}

/// Runs every prelude module with the host object; returns the internals object the
/// modules filled in.
pub(crate) fn load<'js>(ctx: &Ctx<'js>, host: Object<'js>) -> rquickjs::Result<Object<'js>> {
    let compiled = bytecode()
        .map_err(|message| rquickjs::Error::new_loading_message("codemode:prelude", message))?;
    let internals = Object::new(ctx.clone())?;
    run_module(ctx, compiled.prelude)?.call::<_, ()>((host, internals.clone()))?;
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

    /// The build script's bytecode is what this engine writes from the same sources: the
    /// loader may trust it as its own.
    #[test]
    fn the_built_bytecode_is_what_this_engine_compiles() {
        let (prelude, inspect) = super::compile_prelude().unwrap();
        assert!(
            !super::BUILT_PRELUDE.is_empty(),
            "the build script compiled the prelude"
        );
        assert!(super::BUILT_PRELUDE == prelude.as_slice());
        assert!(super::BUILT_INSPECT == inspect.as_slice());
    }
}
