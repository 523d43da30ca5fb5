//! The array guards: native replacements for the few built-ins whose C loops never give the
//! interrupt handler a chance to stop them. On a huge sparse array or array-like
//! (`new Array(1e9).join('')`, `Array.prototype.reverse.call({length: 2 ** 32 - 1})`) they
//! would visit every index for minutes past the deadline without allocating or running
//! JavaScript. A call is refused with a `RangeError` before its loop starts when the indices
//! it would visit number more than the run's [`max_array_length`]: no array that long can
//! hold its elements in the sandbox.
//!
//! Each guard is a native function made with the built-in's `name` and `length` (not
//! constructible, no `prototype`, `[native code]` as its source, as the built-in), installed
//! where the built-in was before any program code runs. A call on a plain array (not a
//! proxy) of at most `max_array_length` elements passes to the built-in at once; a sort
//! without a comparator only up to [`MAX_SORT_LENGTH`] elements (no JavaScript runs between
//! its comparisons); `concat` only when every argument is a primitive or a plain array of
//! at most `max_array_length` elements (any other object may be spread). Reading
//! a plain array's `length` runs no program code (it is an own data property no program can
//! redefine). Every other call (array-likes, proxies, long arrays, and every call of
//! `flat`, `flatMap` and the typed arrays' `sort`) first goes through the prelude's
//! `checkArrayCall(name, self, args)` (`js-prelude/35_guards.js`), which loads the full
//! checks of `js-prelude/36_array_checks.js` on first use, may replace an argument
//! (`flatMap` wraps its callback), and throws the `RangeError`; the built-in then runs with
//! the arguments as the checks left them.
//!
//! Native, not JavaScript: installing them costs no prelude bytecode (about 25 µs of a cold
//! run's CPU, measured), and a call that passes makes no rest array and no `Reflect.apply`.
#![expect(
    unsafe_code,
    reason = "a native function with data slots (the built-in, the check, the limit) and a \
              call through it are made with QuickJS's C API: rquickjs's closures cost an \
              allocation and a boxed closure per function and a Vec per call"
)]

use std::ffi::{CStr, c_int};

use rquickjs::{Ctx, Function, Object, Value, qjs};

/// The longest array a sort without a comparator runs on (no JavaScript runs between its
/// comparisons, so a longer one could outlast the deadline).
pub(super) const MAX_SORT_LENGTH: f64 = 1_048_576.0;

/// The longest array the memory limit `memory` (bytes) can hold: one 8-byte slot per
/// element, at least 65 536.
pub(super) fn max_array_length(memory: usize) -> f64 {
    (memory / 8).max(1 << 16) as f64
}

/// When a guarded call on a plain array of modest length passes at once.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Always.
    Always,
    /// With a comparator, or at most [`MAX_SORT_LENGTH`] elements.
    Sort,
    /// When no argument is a longer or a proxied array.
    Concat,
    /// Never: every call is checked.
    Never,
}

/// Where a guarded built-in lives.
#[derive(Clone, Copy)]
enum On {
    ArrayPrototype,
    /// `%TypedArray%.prototype`.
    TypedArrayPrototype,
}

struct Guard {
    on: On,
    name: &'static CStr,
    pass: Pass,
    /// The name `checkArrayCall` knows the check by.
    check: &'static str,
}

const fn guard(on: On, name: &'static CStr, pass: Pass, check: &'static str) -> Guard {
    Guard {
        on,
        name,
        pass,
        check,
    }
}

/// Every guarded built-in; a guard's index here is its native function's `magic`.
static GUARDS: [Guard; 14] = [
    guard(On::ArrayPrototype, c"join", Pass::Always, "join"),
    guard(
        On::ArrayPrototype,
        c"toLocaleString",
        Pass::Always,
        "toLocaleString",
    ),
    guard(On::ArrayPrototype, c"reverse", Pass::Always, "reverse"),
    guard(On::ArrayPrototype, c"shift", Pass::Always, "shift"),
    guard(On::ArrayPrototype, c"unshift", Pass::Always, "unshift"),
    guard(On::ArrayPrototype, c"slice", Pass::Always, "slice"),
    guard(
        On::ArrayPrototype,
        c"copyWithin",
        Pass::Always,
        "copyWithin",
    ),
    guard(On::ArrayPrototype, c"splice", Pass::Always, "splice"),
    guard(On::ArrayPrototype, c"toSpliced", Pass::Always, "toSpliced"),
    guard(On::ArrayPrototype, c"sort", Pass::Sort, "sort"),
    guard(On::ArrayPrototype, c"concat", Pass::Concat, "concat"),
    guard(On::ArrayPrototype, c"flat", Pass::Never, "flat"),
    guard(On::ArrayPrototype, c"flatMap", Pass::Never, "flatMap"),
    guard(
        On::TypedArrayPrototype,
        c"sort",
        Pass::Never,
        "typedArraySort",
    ),
];

/// Whether `name` is a guarded built-in's name: the engine writes a guard's frame in a
/// stack trace as `at NAME (native)`, right below the built-in's own frame of that name.
pub(crate) fn is_guarded(name: &str) -> bool {
    GUARDS.iter().any(|g| g.name.to_bytes() == name.as_bytes())
}

/// Replaces every guarded built-in of this context with its guard: `check` is the prelude's
/// `checkArrayCall(name, self, args)`, `limit` the run's [`max_array_length`]. Runs before
/// any program code (the built-ins are read as the engine made them). A built-in the engine
/// lacks is left alone.
///
/// # Errors
/// Engine errors only (out of memory).
pub(super) fn install<'js>(
    ctx: &Ctx<'js>,
    check: &Function<'js>,
    limit: f64,
) -> rquickjs::Result<()> {
    let globals = ctx.globals();
    let array = globals
        .get::<_, Object>("Array")?
        .get::<_, Object>("prototype")?;
    let typed = globals
        .get::<_, Object>("Uint8Array")?
        .get::<_, Object>("prototype")?
        .get_prototype();
    for (index, g) in GUARDS.iter().enumerate() {
        let target = match (g.on, &typed) {
            (On::ArrayPrototype, _) => &array,
            (On::TypedArrayPrototype, Some(typed)) => typed,
            (On::TypedArrayPrototype, None) => continue,
        };
        let Ok(name) = g.name.to_str() else { continue };
        let original: Value = target.get(name)?;
        let Some(original) = original.as_function() else {
            continue;
        };
        let length: i32 = original.get("length")?;
        let mut data = [original.as_raw(), check.as_raw(), qjs::JS_NewFloat64(limit)];
        // SAFETY: `ctx` is a live context; `data` holds two live values of it (kept alive
        // by `original` and `check` for the call) and a number, which the new function
        // duplicates into its own slots; `g.name` is NUL-terminated. The result is a new
        // reference (or the exception marker), which `from_raw` takes over.
        let made = unsafe {
            let raw = qjs::JS_NewCFunctionData2(
                ctx.as_raw().as_ptr(),
                Some(call_guarded),
                g.name.as_ptr(),
                length,
                index as c_int,
                data.len() as c_int,
                data.as_mut_ptr(),
            );
            if qjs::JS_IsException(raw) {
                return Err(rquickjs::Error::Exception);
            }
            Value::from_raw(ctx.clone(), raw)
        };
        // The built-in is a writable data property: assigning keeps its attributes.
        target.set(name, made)?;
    }
    Ok(())
}

/// A guard's call: `data` is `[built-in, check, limit]` and `magic` the guard's index in
/// [`GUARDS`]. Passes the call to the built-in at once when its guard allows, else runs the
/// check first (which throws the refusal) and the built-in with the arguments it left.
///
/// # Safety
/// Called by the engine only, as a `JSCFunctionData` made by [`install`]: `ctx` is live,
/// `argv` holds `argc` values and `data` the three slots.
unsafe extern "C" fn call_guarded(
    ctx: *mut qjs::JSContext,
    this: qjs::JSValue,
    argc: c_int,
    argv: *mut qjs::JSValue,
    magic: c_int,
    data: *mut qjs::JSValue,
) -> qjs::JSValue {
    // SAFETY: as the function's contract says; the values are borrowed, not owned.
    unsafe {
        let original = *data;
        let check = *data.add(1);
        let mut limit = 0.0;
        qjs::JS_ToFloat64(ctx, &mut limit, *data.add(2));
        let count = usize::try_from(argc).unwrap_or(0);
        let args: &[qjs::JSValue] = if count == 0 {
            &[]
        } else {
            std::slice::from_raw_parts(argv, count)
        };
        let Some(g) = usize::try_from(magic).ok().and_then(|i| GUARDS.get(i)) else {
            return qjs::JS_Call(ctx, original, this, argc, argv);
        };
        if passes(ctx, g.pass, this, args, limit) {
            return qjs::JS_Call(ctx, original, this, argc, argv);
        }
        checked_call(ctx, g.check, original, check, this, args)
    }
}

/// Whether a call of a guard that passes as `pass` goes to the built-in unchecked: `this`
/// is a plain array (not a proxy: its class is the engine's array class) of at most `limit`
/// elements, and what `pass` adds holds.
///
/// # Safety
/// `ctx` is live and the values are its own.
unsafe fn passes(
    ctx: *mut qjs::JSContext,
    pass: Pass,
    this: qjs::JSValue,
    args: &[qjs::JSValue],
    limit: f64,
) -> bool {
    // SAFETY: as the function's contract says.
    unsafe {
        if pass == Pass::Never || !qjs::JS_IsArray(this) {
            return false;
        }
        let length = array_length(ctx, this);
        // A length is never NaN (see `array_length`).
        if length > limit {
            return false;
        }
        match pass {
            Pass::Always => true,
            Pass::Sort => {
                args.first().is_some_and(|c| !qjs::JS_IsUndefined(*c)) || length <= MAX_SORT_LENGTH
            }
            // An object that is not a plain array may be spread (`Symbol.isConcatSpreadable`):
            // the checks read that without running program code.
            Pass::Concat => args.iter().all(|a| {
                if qjs::JS_IsArray(*a) {
                    array_length(ctx, *a) <= limit
                } else {
                    !qjs::JS_IsObject(*a)
                }
            }),
            Pass::Never => false,
        }
    }
}

/// The `length` of a plain array: an own data property, so reading it runs no program
/// code. Infinity when it cannot be read as a number (which no array's can fail).
///
/// # Safety
/// `ctx` is live and `array` is one of its arrays (the engine's array class).
unsafe fn array_length(ctx: *mut qjs::JSContext, array: qjs::JSValue) -> f64 {
    // SAFETY: as the function's contract says; the property read returns a new reference,
    // freed here.
    unsafe {
        let value = qjs::JS_GetProperty(ctx, array, qjs::JS_ATOM_length as qjs::JSAtom);
        let mut length = f64::INFINITY;
        if qjs::JS_ToFloat64(ctx, &mut length, value) < 0 {
            length = f64::INFINITY;
        }
        qjs::JS_FreeValue(ctx, value);
        length
    }
}

/// `checkArrayCall(check, this, [...args])`, then the built-in with that array's elements
/// (the check may have replaced one). The exception marker when either throws.
///
/// # Safety
/// `ctx` is live and the values are its own, borrowed.
unsafe fn checked_call(
    ctx: *mut qjs::JSContext,
    name: &str,
    original: qjs::JSValue,
    check: qjs::JSValue,
    this: qjs::JSValue,
    args: &[qjs::JSValue],
) -> qjs::JSValue {
    // SAFETY: as the function's contract says. Every value made here is a new reference,
    // freed here or handed over (`JS_NewArrayFrom` takes the duplicated arguments).
    unsafe {
        let name = qjs::JS_NewStringLen(ctx, name.as_ptr().cast(), name.len() as _);
        if qjs::JS_IsException(name) {
            return name;
        }
        let copies: Vec<qjs::JSValue> = args.iter().map(|a| qjs::JS_DupValue(ctx, *a)).collect();
        let count = copies.len() as c_int;
        let list = qjs::JS_NewArrayFrom(ctx, count, copies.as_ptr());
        if qjs::JS_IsException(list) {
            qjs::JS_FreeValue(ctx, name);
            return list;
        }
        let mut check_args = [name, this, list];
        let checked = qjs::JS_Call(ctx, check, qjs::JS_UNDEFINED, 3, check_args.as_mut_ptr());
        qjs::JS_FreeValue(ctx, name);
        if qjs::JS_IsException(checked) {
            qjs::JS_FreeValue(ctx, list);
            return checked;
        }
        qjs::JS_FreeValue(ctx, checked);
        // The check leaves the list's elements own data properties: reading them runs no
        // program code.
        let mut checked_args = Vec::with_capacity(args.len());
        for i in 0..count {
            let value = qjs::JS_GetPropertyUint32(ctx, list, i as u32);
            if qjs::JS_IsException(value) {
                for v in checked_args {
                    qjs::JS_FreeValue(ctx, v);
                }
                qjs::JS_FreeValue(ctx, list);
                return value;
            }
            checked_args.push(value);
        }
        qjs::JS_FreeValue(ctx, list);
        let result = qjs::JS_Call(ctx, original, this, count, checked_args.as_mut_ptr());
        for v in checked_args {
            qjs::JS_FreeValue(ctx, v);
        }
        result
    }
}
