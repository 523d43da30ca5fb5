// Guards for the few built-ins whose C loops never give the interrupt handler a chance to
// stop them: on a huge sparse array or array-like (`new Array(1e9).join('')`,
// `Array.prototype.reverse.call({length: 2 ** 32 - 1})`) they would visit every index for
// minutes past the deadline without allocating or running JavaScript. A call is refused
// with a RangeError before its loop starts when the indices it would visit number more than
// `host.maxArrayLength` (the memory limit / 8: no array that long can hold its elements in
// the sandbox): `slice`, `splice`, `toSpliced` and `copyWithin` count only the range they
// touch, so a call near the end of a long sparse array runs. Default sorts (no comparator,
// so no JavaScript runs between comparisons) are bounded the same way at 1 048 576 elements.
//
// The replacements keep the built-ins' shape (issue 15, item 5): they are methods (not
// constructible, no `.prototype`), with the original `name` and `length`. They read
// `length` only where reading it runs no program code (a data property on a chain without
// proxies, as ECMAScript's [[GetOwnProperty]] of ordinary objects defines it), so the
// built-in's own read stays the only one a program can observe; a `length` behind a getter
// or a proxy is not checked (such a length can differ between two reads, so checking it
// would protect nothing).
//
// Calls on a plain array (not a proxy) of at most `host.maxArrayLength` elements, whose
// `length` is an own data property no program code can stand behind, pass at once (a sort
// without a comparator: at most 1 048 576 elements). Any other call, and every call of
// `concat` with a long or proxied array argument, `flat`, `flatMap` and the typed arrays'
// `sort`, goes through the full checks of 36_array_checks.js, loaded the first time one is
// needed.
"use strict";

const isProxy = host.isProxy;
const limit = host.maxArrayLength;
const loadArrayChecks = host.loadArrayChecks;
const SORT_LIMIT = 1048576;
// `check(name, self, args)`, once loaded.
let check;

// How a guarded method may pass at once on a plain array of modest length.
const PASS = 0; // always
const SORT = 1; // with a comparator, or at most SORT_LIMIT elements
const CONCAT = 2; // when no argument is a long or proxied array
const CHECK = 3; // never

// Replaces `target[name]` with a method that passes at once as `kind` says, or else calls
// `check` (as `checkName`) first.
function install(target, name, kind, checkName) {
  const original = target[name];
  if (typeof original !== "function") return;
  const method = {
    [name](...args) {
      if (kind !== CHECK && !isProxy(this) && ArrayIsArray(this)) {
        const len = this.length;
        let pass = len <= limit;
        // `args` is the rest array: an index past its length would read the prototypes.
        if (pass && kind === SORT) pass = (args.length > 0 && args[0] !== undefined) || len <= SORT_LIMIT;
        if (pass && kind === CONCAT) {
          for (let i = 0; i < args.length && pass; i++) {
            const a = args[i];
            pass = !ArrayIsArray(a) || (!isProxy(a) && a.length <= limit);
          }
        }
        if (pass) return ReflectApply(original, this, args);
      }
      if (check === undefined) {
        check = loadArrayChecks({
          __proto__: null,
          isProxy, limit, SORT_LIMIT, ObjectGetOwnPropertyDescriptor,
          ObjectPrototypeHasOwnProperty, ObjectGetPrototypeOf, ArrayIsArray, ReflectApply,
          TypedArrayPrototypeGetLength, MathFloor, Number, Object, RangeError,
        });
      }
      check(checkName, this, args);
      return ReflectApply(original, this, args);
    },
  }[name];
  ObjectDefineProperty(method, "length", { value: original.length });
  // The built-in is a writable data property: assigning keeps its attributes.
  target[name] = method;
}

for (const name of ["join", "toLocaleString", "reverse", "shift", "unshift", "slice", "copyWithin", "splice", "toSpliced"]) {
  install(ArrayPrototype, name, PASS, name);
}
install(ArrayPrototype, "sort", SORT, "sort");
install(ArrayPrototype, "concat", CONCAT, "concat");
install(ArrayPrototype, "flat", CHECK, "flat");
install(ArrayPrototype, "flatMap", CHECK, "flatMap");
install(TypedArrayPrototype, "sort", CHECK, "typedArraySort");

// `Error.stackTraceLimit`: the engine's setter keeps the new value without releasing the
// old one, so an object or string assigned and then replaced would stay allocated when the
// run's engine is freed, where QuickJS checks that nothing is left and aborts the whole
// process. The setter here hands the engine a number instead (what the engine converts the
// limit to when it builds a stack trace); reading gives that number.
{
  const d = ObjectGetOwnPropertyDescriptor(Error, "stackTraceLimit");
  if (d !== undefined && typeof d.set === "function" && typeof d.get === "function") {
    const nativeGet = d.get;
    const nativeSet = d.set;
    ObjectDefineProperty(Error, "stackTraceLimit", {
      get: function stackTraceLimit() {
        return ReflectApply(nativeGet, this, []);
      },
      set: function stackTraceLimit(value) {
        const t = typeof value;
        const n = t === "number" || t === "undefined" || t === "boolean" || value === null
          ? value
          : t === "symbol" ? NaN : Number(value);
        ReflectApply(nativeSet, this, [n]);
      },
      enumerable: d.enumerable,
      configurable: d.configurable,
    });
  }
}
