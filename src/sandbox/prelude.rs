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

use rquickjs::object::Property;
use rquickjs::{Ctx, Function, Module, Object, Value};

include!("prelude_source.rs");

/// Bytecode the build script compiled from the same sources with the same engine version,
/// every module packed in one blob (see `unpack`); empty when it could not (a cross build, or
/// a failure it reported as a warning).
static BUILT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/prelude.bc"));

/// A module of the prelude that loads only when a run first needs it, through the host's
/// `load` (its place in [`LAZY`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Lazy {
    /// 22_discovery.js: `(P, engine)` → `{ search, describe, unknown }`.
    Discovery,
    /// 31_inspect.js: `(P, engine)` → `{ formatArgs, inspect }` (see [`load_inspect`]).
    Inspect,
    /// 36_array_checks.js: `(P)` → `check(name, self, args)`.
    ArrayChecks,
    /// 41_journal_clock.js: `(P)` → `undefined`.
    JournalClock,
    /// 42_timer_table.js: `(P, engine)` → `{ start, stop, fire }`.
    TimerTable,
}

/// The prelude's bytecode: the prelude module, and each [`Lazy`] module in its order.
struct Compiled {
    prelude: &'static [u8],
    lazy: Vec<&'static [u8]>,
}

/// The bytecode of every prelude module: the build script's, or compiled on first use.
fn bytecode() -> Result<&'static Compiled, String> {
    static BYTECODE: OnceLock<Result<Compiled, String>> = OnceLock::new();
    BYTECODE
        .get_or_init(|| {
            let modules = match unpack(BUILT) {
                Some(modules) => modules,
                None => compile_prelude()?
                    .into_iter()
                    .map(|module| &*module.leak())
                    .collect(),
            };
            match modules.split_first() {
                Some((prelude, lazy)) if lazy.len() == LAZY.len() => Ok(Compiled {
                    prelude,
                    lazy: lazy.to_vec(),
                }),
                _ => Err(format!(
                    "the prelude's bytecode holds {} modules, not {}",
                    modules.len(),
                    1 + LAZY.len()
                )),
            }
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The modules a blob holds, in order; `None` for an empty or malformed one. The build
/// script writes the blob (`pack` in `src/build.rs`): for each module, its length in bytes
/// (4 bytes, little-endian), then its bytes.
fn unpack(mut blob: &'static [u8]) -> Option<Vec<&'static [u8]>> {
    let mut modules = Vec::new();
    while let Some((length, rest)) = blob.split_first_chunk::<4>() {
        let length = usize::try_from(u32::from_le_bytes(*length)).ok()?;
        let (module, rest) = rest.split_at_checked(length)?;
        modules.push(module);
        blob = rest;
    }
    (blob.is_empty() && !modules.is_empty()).then_some(modules)
}

/// Loads the module `bytes` from the prelude's bytecode and returns its default export.
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

/// The prelude's bytecode, or the engine's loading error.
fn compiled() -> rquickjs::Result<&'static Compiled> {
    bytecode().map_err(|message| rquickjs::Error::new_loading_message("codemode:prelude", message))
}

/// Loads the lazy `module` and calls its function with `args` (see [`Lazy`] for each
/// one's parameters and result).
pub(crate) fn load_lazy<'js, A, R>(ctx: &Ctx<'js>, module: Lazy, args: A) -> rquickjs::Result<R>
where
    A: rquickjs::function::IntoArgs<'js>,
    R: rquickjs::FromJs<'js>,
{
    run_module(ctx, compiled()?.lazy[module as usize])?.call(args)
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
    load_lazy(ctx, Lazy::Inspect, (primordials, engine))
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

/// The globals programs see besides the engine's own, each read from the internals object
/// under the same name and installed non-writable, non-enumerable and non-configurable (see
/// "Programs" in the README).
const GLOBALS: [&str; 7] = [
    "tools",
    "console",
    "ToolCallError",
    "setTimeout",
    "clearTimeout",
    "setInterval",
    "clearInterval",
];

/// Runs every prelude module with the host object, then installs [`GLOBALS`]; returns the
/// internals object the modules filled in. Installed here rather than by the prelude: a
/// definition from the host needs no descriptor object, which costs every run.
pub(crate) fn load<'js>(ctx: &Ctx<'js>, host: Object<'js>) -> rquickjs::Result<Object<'js>> {
    let internals = Object::new(ctx.clone())?;
    run_module(ctx, compiled()?.prelude)?.call::<_, ()>((host, internals.clone()))?;
    let global = ctx.globals();
    for name in GLOBALS {
        let value: Value<'js> = internals.get(name)?;
        global.prop(name, Property::from(value))?;
    }
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
        listed.extend(super::LAZY.iter().map(|(n, _, _)| (*n).to_owned()));
        listed.sort();
        assert_eq!(on_disk, listed);
    }

    /// `Lazy` names the modules of `LAZY` in its order.
    #[test]
    fn each_lazy_module_is_named_in_the_order_it_is_listed() {
        use super::Lazy;
        let named = [
            (Lazy::Discovery, "22_discovery.js"),
            (Lazy::Inspect, "31_inspect.js"),
            (Lazy::ArrayChecks, "36_array_checks.js"),
            (Lazy::JournalClock, "41_journal_clock.js"),
            (Lazy::TimerTable, "42_timer_table.js"),
        ];
        assert_eq!(named.len(), super::LAZY.len());
        for (module, file) in named {
            assert_eq!(super::LAZY[module as usize].0, file, "{module:?}");
        }
    }

    /// A packed blob reads back as the modules it holds; an empty, cut or overlong one
    /// reads as none.
    #[test]
    fn packed_modules_unpack_as_they_were_and_a_damaged_blob_as_none() {
        let mut blob = vec![3u8, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 44, 1, 0, 0];
        blob.extend([9u8; 300]);
        let blob: &'static [u8] = blob.leak();
        let back = super::unpack(blob).unwrap();
        assert_eq!(back, [&[1u8, 2, 3][..], &[], &[9u8; 300][..]]);
        assert_eq!(super::unpack(&[]), None);
        assert_eq!(super::unpack(&blob[..blob.len() - 1]), None);
        assert_eq!(super::unpack(&[5, 0, 0, 0, 1, 2]), None);
        assert_eq!(super::unpack(&[0, 0, 0]), None);
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
        assert_eq!(compiled.lazy.len(), super::LAZY.len());
        assert!(compiled.lazy.iter().all(|module| !module.is_empty()));
    }

    /// The build script's bytecode is what this engine writes from the same sources: the
    /// loader may trust it as its own.
    #[test]
    fn the_built_bytecode_is_what_this_engine_compiles() {
        assert!(
            !super::BUILT.is_empty(),
            "the build script compiled the prelude"
        );
        let built = super::unpack(super::BUILT).unwrap();
        let compiled = super::compile_prelude().unwrap();
        assert!(built == compiled.iter().map(Vec::as_slice).collect::<Vec<_>>());
    }
}
