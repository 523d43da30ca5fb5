//! The JavaScript installed into every sandbox before the program (`js-prelude/`), in
//! order, as one ES module, `codemode:prelude/prelude.js`, whose default export is
//! `function (host, internals) { … }`: the primordials (`00_primordials.js`) are the top of
//! its body, in scope in every later file, and each later file runs in its own block.
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
static BUILT_ARRAY_CHECKS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/array_checks.bc"));
static BUILT_DISCOVERY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/discovery.bc"));
static BUILT_JOURNAL_CLOCK: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/journal_clock.bc"));

/// The prelude's bytecode: the prelude module and the four modules loaded on first use.
struct Compiled {
    prelude: &'static [u8],
    inspect: &'static [u8],
    array_checks: &'static [u8],
    discovery: &'static [u8],
    journal_clock: &'static [u8],
}

/// The bytecode of every prelude module: the build script's, or compiled on first use.
fn bytecode() -> Result<&'static Compiled, String> {
    static BYTECODE: OnceLock<Result<Compiled, String>> = OnceLock::new();
    BYTECODE
        .get_or_init(|| {
            if !BUILT_PRELUDE.is_empty()
                && !BUILT_INSPECT.is_empty()
                && !BUILT_ARRAY_CHECKS.is_empty()
                && !BUILT_DISCOVERY.is_empty()
                && !BUILT_JOURNAL_CLOCK.is_empty()
            {
                return Ok(Compiled {
                    prelude: BUILT_PRELUDE,
                    inspect: BUILT_INSPECT,
                    array_checks: BUILT_ARRAY_CHECKS,
                    discovery: BUILT_DISCOVERY,
                    journal_clock: BUILT_JOURNAL_CLOCK,
                });
            }
            let [prelude, inspect, array_checks, discovery, journal_clock] = compile_prelude()?;
            Ok(Compiled {
                prelude: prelude.leak(),
                inspect: inspect.leak(),
                array_checks: array_checks.leak(),
                discovery: discovery.leak(),
                journal_clock: journal_clock.leak(),
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Loads the module `pick` chooses from the prelude's bytecode and returns its default
/// export.
fn run_module<'js>(
    ctx: &Ctx<'js>,
    pick: fn(&Compiled) -> &'static [u8],
) -> rquickjs::Result<Function<'js>> {
    let compiled = bytecode()
        .map_err(|message| rquickjs::Error::new_loading_message("codemode:prelude", message))?;
    let bytes = pick(compiled);
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
/// `Symbol.toStringTag` getter, `Symbol.hasInstance`, or the stack trace hooks a thrown
/// brand-check error would call): `{ proxyTarget(value), kindOf(value),
/// isClassSource(text) }` (see [`proxy_target`], [`kind_of`] and [`is_class_text`]).
/// Returns the module's `{ formatArgs, inspect }`.
pub(crate) fn load_inspect<'js>(
    ctx: &Ctx<'js>,
    primordials: Object<'js>,
) -> rquickjs::Result<Object<'js>> {
    // No prototype: an accessor a program put on `Object.prototype` under either name
    // neither sees nor replaces these functions.
    let engine = Object::new(ctx.clone())?;
    engine.set_prototype(None)?;
    engine.set("proxyTarget", Function::new(ctx.clone(), proxy_target)?)?;
    engine.set("kindOf", Function::new(ctx.clone(), kind_of)?)?;
    engine.set("isClassSource", Function::new(ctx.clone(), is_class_text)?)?;
    run_module(ctx, |c| c.inspect)?.call((primordials, engine))
}

/// Loads the array checks module (36_array_checks.js) with the primordials `P` it reads.
/// Returns its `check(name, self, args)`, which throws a guarded call's `RangeError`.
pub(crate) fn load_array_checks<'js>(
    ctx: &Ctx<'js>,
    primordials: Object<'js>,
) -> rquickjs::Result<Function<'js>> {
    run_module(ctx, |c| c.array_checks)?.call((primordials,))
}

/// Loads the discovery module (22_discovery.js) with the primordials and prelude pieces `P`
/// it reads and the host's `engine` functions (`searchTools`, `describeTools`). Returns its
/// `{ search, describe }`, the bodies of `tools.$search` and `tools.$describe`.
pub(crate) fn load_discovery<'js>(
    ctx: &Ctx<'js>,
    primordials: Object<'js>,
    engine: Object<'js>,
) -> rquickjs::Result<Object<'js>> {
    run_module(ctx, |c| c.discovery)?.call((primordials, engine))
}

/// Loads the journal clock module (41_journal_clock.js) with the primordials `P` it reads
/// (and the host's `clock` and `random`): a run that may pause reads its clock and random
/// numbers from the host from then on.
pub(crate) fn load_journal_clock<'js>(
    ctx: &Ctx<'js>,
    primordials: Object<'js>,
) -> rquickjs::Result<()> {
    run_module(ctx, |c| c.journal_clock)?.call((primordials,))
}

/// What a proxy stands for: the target of its target, and so on, until one is not a proxy
/// (callable proxies included); `null` when one on the way is revoked; `undefined` for a
/// value that is not a proxy. Runs no trap.
fn proxy_target<'js>(ctx: Ctx<'js>, value: Value<'js>) -> Value<'js> {
    if !value.is_proxy() {
        return Value::new_undefined(ctx);
    }
    let mut current = value;
    while current.is_proxy() {
        #[expect(
            unsafe_code,
            reason = "rquickjs offers a proxy's target only for proxies that are not callable"
        )]
        // SAFETY: `current` is a live proxy of this context; `JS_GetProxyTarget` returns a
        // new reference (or the exception marker for a revoked proxy), which `from_raw`
        // takes over.
        let target = unsafe {
            Value::from_raw(
                ctx.clone(),
                rquickjs::qjs::JS_GetProxyTarget(ctx.as_raw().as_ptr(), current.as_raw()),
            )
        };
        if target.is_exception() {
            // Revoked: the engine's TypeError is dropped, not left pending.
            let _ = ctx.catch();
            return Value::new_null(ctx);
        }
        current = target;
    }
    current
}

/// The built-in `value` is, by the engine's internal class, not by anything a program can
/// change: `"Error"`, `"Promise"`, `"Date"`, `"RegExp"`, `"Map"`, `"Set"`, `"WeakMap"`,
/// `"WeakSet"`, `"ArrayBuffer"`, or `""` for anything else.
fn kind_of(value: Value<'_>) -> &'static str {
    if value.is_error() {
        return "Error";
    }
    if value.is_promise() {
        return "Promise";
    }
    if !value.is_object() {
        return "";
    }
    let raw = value.as_raw();
    #[expect(
        unsafe_code,
        reason = "rquickjs has no safe check for these classes; the C functions only read the object's class"
    )]
    // SAFETY: `raw` is a live object of this context (held by `value` for the whole
    // block); each function reads its class id and nothing else.
    unsafe {
        use rquickjs::qjs;
        let checks: [(unsafe extern "C" fn(qjs::JSValue) -> bool, &'static str); 7] = [
            (qjs::JS_IsDate, "Date"),
            (qjs::JS_IsRegExp, "RegExp"),
            (qjs::JS_IsMap, "Map"),
            (qjs::JS_IsSet, "Set"),
            (qjs::JS_IsWeakMap, "WeakMap"),
            (qjs::JS_IsWeakSet, "WeakSet"),
            (qjs::JS_IsArrayBuffer, "ArrayBuffer"),
        ];
        for (is, kind) in checks {
            if is(raw) {
                return kind;
            }
        }
    }
    ""
}

/// Whether `text` is a string that [`is_class_source`] takes for a class's source.
pub(crate) fn is_class_text(text: Value<'_>) -> bool {
    text.as_string()
        .and_then(|text| text.to_string().ok())
        .is_some_and(|text| is_class_source(&text))
}

/// Whether `source`, what the original `Function.prototype.toString` gave for a function,
/// is a class's: it starts with the keyword `class`, then, past white space and comments,
/// a name, `extends` or `{` (a method named `class` has `(` there; `classes` is a name).
/// White space and line terminators are ECMAScript's (§12.2, §12.3).
pub(crate) fn is_class_source(source: &str) -> bool {
    let Some(mut rest) = source.strip_prefix("class") else {
        return false;
    };
    if !rest.starts_with(|c: char| is_js_space(c) || c == '/' || c == '{') {
        return false;
    }
    loop {
        if let Some(after) = rest.strip_prefix(is_js_space) {
            rest = after;
        } else if let Some(after) = rest.strip_prefix("/*") {
            let Some(end) = after.find("*/") else {
                return false;
            };
            rest = &after[end + 2..];
        } else if let Some(after) = rest.strip_prefix("//") {
            rest =
                after.trim_start_matches(|c| !matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}'));
        } else {
            return !rest.starts_with('(');
        }
    }
}

/// ECMAScript's white space and line terminators (§12.2, §12.3).
fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// Runs every prelude module with the host object; returns the internals object the
/// modules filled in.
pub(crate) fn load<'js>(ctx: &Ctx<'js>, host: Object<'js>) -> rquickjs::Result<Object<'js>> {
    let internals = Object::new(ctx.clone())?;
    run_module(ctx, |c| c.prelude)?.call::<_, ()>((host, internals.clone()))?;
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
        listed.push(super::ARRAY_CHECKS.0.to_owned());
        listed.push(super::DISCOVERY.0.to_owned());
        listed.push(super::JOURNAL_CLOCK.0.to_owned());
        listed.sort();
        assert_eq!(on_disk, listed);
    }

    /// Sources `Function.prototype.toString` gives, and whether each is a class's.
    #[test]
    fn a_class_source_is_told_from_a_method_named_class_and_from_names_starting_with_it() {
        for (source, is_class) in [
            ("class A {}", true),
            ("class{}", true),
            ("class extends B {}", true),
            ("class/* c */A {}", true),
            ("class // line\n A {}", true),
            ("class\u{2028}A {}", true),
            ("class\u{feff}\u{3000}A {}", true),
            ("class /* a */ /* b */ {}", true),
            ("class", false),
            ("class() { return 1 }", false),
            ("class /* c */ () {}", false),
            ("class // (\n () {}", false),
            ("classes => 5", false),
            ("class_ => 5", false),
            ("class /* unterminated", false),
            ("function A() {}", false),
            (" class A {}", false),
            ("", false),
        ] {
            assert_eq!(super::is_class_source(source), is_class, "{source:?}");
        }
    }

    #[test]
    fn the_prelude_compiles_to_bytecode() {
        let compiled = super::bytecode().unwrap();
        assert!(!compiled.prelude.is_empty());
        assert!(!compiled.inspect.is_empty());
        assert!(!compiled.array_checks.is_empty());
        assert!(!compiled.discovery.is_empty());
        assert!(!compiled.journal_clock.is_empty());
    }

    /// The build script's bytecode is what this engine writes from the same sources: the
    /// loader may trust it as its own.
    #[test]
    fn the_built_bytecode_is_what_this_engine_compiles() {
        let [prelude, inspect, array_checks, discovery, journal_clock] =
            super::compile_prelude().unwrap();
        assert!(
            !super::BUILT_PRELUDE.is_empty(),
            "the build script compiled the prelude"
        );
        assert!(super::BUILT_PRELUDE == prelude.as_slice());
        assert!(super::BUILT_INSPECT == inspect.as_slice());
        assert!(super::BUILT_ARRAY_CHECKS == array_checks.as_slice());
        assert!(super::BUILT_DISCOVERY == discovery.as_slice());
        assert!(super::BUILT_JOURNAL_CLOCK == journal_clock.as_slice());
    }
}
