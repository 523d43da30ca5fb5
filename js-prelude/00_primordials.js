// Built-ins captured before any program code runs (the idea of deno_core's primordials):
// a program that later replaces `Promise`, `JSON`, `Object.prototype` or
// `Array.prototype.map` changes nothing the prelude or the host relies on.
//
// This file is the top of the body of `function (host, internals) { ... }`, not a function
// of its own: its constants are in scope in every later file (each of which runs in a
// function inside it), so using one is a local read, and none costs a property on an
// object. The two objects built from them are smaller: `internals.primordials` holds what
// the host reads (src/sandbox/convert.rs and bridge.rs), and `inspectPrimordials()` builds
// what the inspect module reads, when it loads.
//
// `uncurryThis(fn)` makes `fn(self, ...args)` from a method: a closure over `ReflectApply`,
// not a bind, which costs more to make (it reads the `name` and `length` of what it binds
// and builds a name). Methods only the inspect module calls are captured as they are, and
// wrapped when it loads (a wrapper costs more than a read).
"use strict";

const {
  Object, Array, String, Number, Boolean, BigInt, Symbol, Error, TypeError, RangeError,
  Promise, Proxy, Map, Set, WeakMap, WeakSet, WeakRef, ArrayBuffer, Date, RegExp, Math,
} = globalThis;
const ReflectApply = Reflect.apply;
const uncurryThis = (fn) => (self, ...args) => ReflectApply(fn, self, args);
// An accessor's getter, read without building a descriptor object.
const lookupGetter = Object.prototype.__lookupGetter__;
const getterOf = (object, key) => ReflectApply(lookupGetter, object, [key]);

const ObjectPrototype = Object.prototype;
const ArrayPrototype = Array.prototype;
const TypedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype);
const ObjectCreate = Object.create;
const ObjectDefineProperty = Object.defineProperty;
const ObjectFreeze = Object.freeze;
const ObjectGetOwnPropertyNames = Object.getOwnPropertyNames;
const ObjectGetOwnPropertySymbols = Object.getOwnPropertySymbols;
const ObjectGetOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
const ObjectGetPrototypeOf = Object.getPrototypeOf;
const ObjectSetPrototypeOf = Object.setPrototypeOf;
const ObjectIs = Object.is;
const ObjectPrototypeHasOwnProperty = uncurryThis(ObjectPrototype.hasOwnProperty);
const ReflectConstruct = Reflect.construct;
const ArrayIsArray = Array.isArray;
const StringPrototypeSlice = uncurryThis(String.prototype.slice);
const StringPrototypeToWellFormed = uncurryThis(String.prototype.toWellFormed);
const PromiseRejectStatic = Promise.reject;
const PromiseResolveStatic = Promise.resolve;
const PromiseReject = (reason) => ReflectApply(PromiseRejectStatic, Promise, [reason]);
const PromiseResolve = (value) => ReflectApply(PromiseResolveStatic, Promise, [value]);
const MapPrototypeSet = uncurryThis(Map.prototype.set);
const MapPrototypeDelete = uncurryThis(Map.prototype.delete);
const MapPrototypeClear = uncurryThis(Map.prototype.clear);
const MapPrototypeForEach = uncurryThis(Map.prototype.forEach);
const WeakMapPrototypeGet = uncurryThis(WeakMap.prototype.get);
const WeakMapPrototypeSet = uncurryThis(WeakMap.prototype.set);
const TypedArrayPrototypeGetLength = uncurryThis(getterOf(TypedArrayPrototype, "length"));
const ArrayBufferIsView = ArrayBuffer.isView;
const DateNow = Date.now;
const DatePrototypeToString = uncurryThis(Date.prototype.toString);
const MathFloor = Math.floor;
const MathMin = Math.min;
const enginePerformance = performance;
const enginePerformanceNow = enginePerformance.now;
const performanceNow = () => ReflectApply(enginePerformanceNow, enginePerformance, []);

// Read only by the inspect module (wrapped when it loads, see `inspectPrimordials`).
const StringPrototype = String.prototype;
const unbound = [
  "ObjectPrototypeToString", ObjectPrototype.toString,
  "ArrayPrototypePush", ArrayPrototype.push,
  "ArrayPrototypeJoin", ArrayPrototype.join,
  "StringPrototypeCharCodeAt", StringPrototype.charCodeAt,
  "StringPrototypeStartsWith", StringPrototype.startsWith,
  "StringPrototypePadStart", StringPrototype.padStart,
  "StringPrototypeIncludes", StringPrototype.includes,
  "StringPrototypeRepeat", StringPrototype.repeat,
  "StringPrototypeValueOf", StringPrototype.valueOf,
  "NumberPrototypeToString", Number.prototype.toString,
  "NumberPrototypeValueOf", Number.prototype.valueOf,
  "BooleanPrototypeValueOf", Boolean.prototype.valueOf,
  "BigIntPrototypeToString", BigInt.prototype.toString,
  "SymbolPrototypeToString", Symbol.prototype.toString,
  "FunctionPrototypeToString", Function.prototype.toString,
  "DatePrototypeGetTime", Date.prototype.getTime,
  "DatePrototypeToISOString", Date.prototype.toISOString,
  "MapPrototypeGetSize", getterOf(Map.prototype, "size"),
  "SetPrototypeForEach", Set.prototype.forEach,
  "SetPrototypeGetSize", getterOf(Set.prototype, "size"),
  "ArrayBufferPrototypeGetByteLength", getterOf(ArrayBuffer.prototype, "byteLength"),
  "TypedArrayPrototypeGetSymbolToStringTag", getterOf(TypedArrayPrototype, Symbol.toStringTag),
];
// The engine's `stack` is an accessor on Error.prototype (native: it runs no program code).
// Its text names positions in the code the engine runs, which is the program wrapped and
// marked: the getter programs see puts them in the program's own lines and columns (the
// host maps them), keeping the engine's setter. It runs no program code either. The host
// reads the engine's own text (`ErrorStackNative`) for a run's error, and maps it itself.
const ErrorStackNative = getterOf(Error.prototype, "stack");
const ErrorStackGetter = (() => {
  const d = ObjectGetOwnPropertyDescriptor(Error.prototype, "stack");
  if (d === undefined || typeof d.get !== "function") return undefined;
  const nativeGet = d.get;
  const inSource = host.programStack;
  const get = {
    get stack() {
      const text = ReflectApply(nativeGet, this, []);
      return typeof text === "string" ? inSource(text) : text;
    },
  };
  const getter = getterOf(get, "stack");
  ObjectDefineProperty(Error.prototype, "stack", {
    __proto__: null,
    get: getter,
    set: d.set,
    enumerable: d.enumerable,
    configurable: d.configurable,
  });
  return getter;
})();

// Whether `fn` is a class: its source starts with the keyword `class`, then (past white
// space and comments) a name, `extends` or `{`; a method named `class` has `(` there.
// Calling a class is rejected. False for what cannot tell (a bound class, a proxy).
const FunctionPrototypeToString = Function.prototype.toString;
const StringPrototypeStartsWith = StringPrototype.startsWith;
const StringPrototypeCharCodeAt = StringPrototype.charCodeAt;
const StringPrototypeIndexOf = StringPrototype.indexOf;
const isSpace = (c) =>
  (c >= 0x09 && c <= 0x0d) || c === 0x20 || c === 0xa0 || c === 0x1680 ||
  (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f ||
  c === 0x205f || c === 0x3000 || c === 0xfeff;
const isClass = (fn) => {
  let source;
  try {
    source = ReflectApply(FunctionPrototypeToString, fn, []);
  } catch {
    return false;
  }
  if (!ReflectApply(StringPrototypeStartsWith, source, ["class"])) return false;
  const at = (i) => ReflectApply(StringPrototypeCharCodeAt, source, [i]);
  let i = 5;
  if (!(isSpace(at(i)) || at(i) === 0x2f || at(i) === 0x7b)) return false; // `classes`
  for (;;) {
    if (isSpace(at(i))) {
      i++;
    } else if (at(i) === 0x2f && at(i + 1) === 0x2a) { // /* … */
      const end = ReflectApply(StringPrototypeIndexOf, source, ["*/", i + 2]);
      if (end < 0) return false;
      i = end + 2;
    } else if (at(i) === 0x2f && at(i + 1) === 0x2f) { // // … line end
      while (i < source.length && at(i) !== 0x0a && at(i) !== 0x0d && at(i) !== 0x2028 && at(i) !== 0x2029) i++;
    } else {
      return at(i) !== 0x28; // `(`: a method named `class`
    }
  }
};

// A regular expression's text from the engine's own accessors, which read its internal
// slots: `RegExp.prototype.toString` would read `source` and `flags` with [[Get]], and
// `flags` each flag, all of which a program can redefine on `RegExp.prototype`.
const regExpSource = getterOf(RegExp.prototype, "source");
// In the order of ECMAScript's `get RegExp.prototype.flags` (§22.2.6.4): each getter, then
// its letter.
const regExpFlags = [];
const flagNames = ["hasIndices", "d", "global", "g", "ignoreCase", "i", "multiline", "m",
  "dotAll", "s", "unicode", "u", "unicodeSets", "v", "sticky", "y"];
for (let i = 0; i < flagNames.length; i += 2) {
  const get = getterOf(RegExp.prototype, flagNames[i]);
  if (typeof get === "function") {
    regExpFlags[regExpFlags.length] = get;
    regExpFlags[regExpFlags.length] = flagNames[i + 1];
  }
}
// `/source/flags` of a regular expression; throws a TypeError for an object that is not one.
const RegExpText = (re) => {
  let flags = "";
  for (let i = 0; i < regExpFlags.length; i += 2) {
    if (ReflectApply(regExpFlags[i], re, [])) flags += regExpFlags[i + 1];
  }
  return "/" + ReflectApply(regExpSource, re, []) + "/" + flags;
};

// What the host reads (by name).
internals.primordials = {
  __proto__: null,
  ObjectPrototype, ArrayPrototype, Promise, BigInt, Map, Set, WeakMap, WeakSet, WeakRef,
  ArrayBuffer, RegExp, ArrayBufferIsView, ObjectPrototypeHasOwnProperty, isClass,
  ArrayIsArray, ObjectGetPrototypeOf, ErrorStackNative,
};

// What the inspect module reads: a new object on each call (once per run).
const inspectPrimordials = () => {
  const P = {
    __proto__: null,
    ObjectCreate, ObjectGetOwnPropertyNames, ObjectGetOwnPropertySymbols,
    ObjectGetOwnPropertyDescriptor, ObjectGetPrototypeOf, ObjectSetPrototypeOf, ObjectIs,
    ObjectPrototypeHasOwnProperty, ReflectApply, ArrayIsArray, String, Number, Symbol,
    TypeError, RangeError, StringPrototypeSlice, RegExp, RegExpText, MathMin, MathFloor,
    ArrayBufferIsView, TypedArrayPrototypeGetLength, MapPrototypeForEach, ErrorStackGetter,
    isClass,
  };
  for (let i = 0; i < unbound.length; i += 2) {
    const method = unbound[i + 1];
    ObjectDefineProperty(P, unbound[i], {
      __proto__: null,
      value: (self, ...args) => ReflectApply(method, self, args),
    });
  }
  return P;
};
