// The array guards' checks (see src/sandbox/guards.rs): the host replaces `join`,
// `reverse`, `slice`, `sort`, `concat`, `flat` and the other built-ins whose C loops never
// give the interrupt handler a chance to stop them with native guards, which pass a call on
// a plain array of modest length to the built-in at once and call `checkArrayCall` for any
// other first. It runs the full checks of 36_array_checks.js, loaded the first time one is
// needed: they throw a RangeError for work past `host.maxArrayLength` (the memory limit / 8:
// no array that long can hold its elements in the sandbox) and may replace an argument
// (`flatMap` wraps its callback); the guard then calls the built-in with `args` as they
// left it. The checks read `length` only where reading it runs no program code.
"use strict";

const isProxy = host.isProxy;
const limit = host.maxArrayLength;
const SORT_LIMIT = host.maxSortLength;
const load = host.load;
const SymbolIsConcatSpreadable = Symbol.isConcatSpreadable;
// `check(name, self, args)`, once loaded.
let check;

internals.checkArrayCall = function checkArrayCall(name, self, args) {
  if (check === undefined) {
    check = load("arrayChecks", {
      __proto__: null,
      isProxy, limit, SORT_LIMIT, ObjectGetOwnPropertyDescriptor,
      ObjectHasOwn, ObjectGetPrototypeOf, ArrayIsArray, ReflectApply,
      TypedArrayPrototypeGetLength: uncurryThis(typedArrayLength), MathFloor, Number, Object,
      RangeError, WeakMap, WeakMapPrototypeGet: uncurryThis(weakMapGet),
      WeakMapPrototypeSet: uncurryThis(weakMapSet), SymbolIsConcatSpreadable,
    });
  }
  check(name, self, args);
};

// `Error.stackTraceLimit`: the engine's setter keeps the new value without releasing the
// old one, so an object or string assigned and then replaced would stay allocated when the
// run's engine is freed, where QuickJS checks that nothing is left and aborts the whole
// process. The setter here hands the engine a number instead (what the engine converts the
// limit to when it builds a stack trace); the engine's own getter reads it back.
{
  const d = ObjectGetOwnPropertyDescriptor(Error, "stackTraceLimit");
  if (d !== undefined && typeof d.set === "function" && typeof d.get === "function") {
    const nativeSet = d.set;
    // Only the setter is given: the engine's getter, enumerability and configurability stay.
    ObjectDefineProperty(Error, "stackTraceLimit", {
      __proto__: null,
      set: function stackTraceLimit(value) {
        const t = typeof value;
        const n = t === "number" || t === "undefined" || t === "boolean" || value === null
          ? value
          : t === "symbol" ? NaN : Number(value);
        ReflectApply(nativeSet, this, [n]);
      },
    });
  }
}
