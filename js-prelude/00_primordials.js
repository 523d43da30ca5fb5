// Built-ins captured before any program code runs (the idea of deno_core's primordials):
// a program that later replaces `Promise`, `JSON`, `Object.prototype` or
// `Array.prototype.map` changes nothing the prelude or the host relies on.
//
// This file is the top of the body of `function (host, internals) { ... }`, not a function
// of its own: its constants are in scope in every later file (each of which is a block
// inside it), so using one is a local read, and none costs a property on an
// object. `internals.primordials` holds what the host reads (src/sandbox/convert.rs and
// bridge.rs); each lazy module gets what it reads when it loads.
//
// `uncurryThis(fn)` makes `fn(self, ...args)` from a method: a closure over `ReflectApply`,
// not a bind, which costs more to make (it reads the `name` and `length` of what it binds
// and builds a name). Every function made here costs every run (making it, and freeing it
// and its bytecode at the end), so methods only the lazy modules call are captured as
// they are (lower-case names: call them with `ReflectApply`), and wrapped when a module
// loads; those only the inspect module calls are one list without names
// (`printerMethods`), named there. Most runs never print, search or time.
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
const ObjectHasOwn = Object.hasOwn;
const ArrayIsArray = Array.isArray;
const stringSlice = String.prototype.slice;
const stringToWellFormed = String.prototype.toWellFormed;
const promiseReject = Promise.reject;
const promiseResolve = Promise.resolve;
const weakMapGet = WeakMap.prototype.get;
const weakMapSet = WeakMap.prototype.set;
const typedArrayLength = getterOf(TypedArrayPrototype, "length");
const ArrayBufferIsView = ArrayBuffer.isView;
const DateNow = Date.now;
const MathFloor = Math.floor;
const MathMin = Math.min;
const enginePerformance = performance;
const enginePerformanceNow = enginePerformance.now;

// Read only by the inspect module, which names them, in this order (`PRINTER_METHODS` in
// 31_inspect.js), and wraps them when it loads. The regular expression accessors read its
// internal slots (`RegExp.prototype.toString` would read `source` and `flags` with [[Get]],
// which a program can redefine): `source`, then each flag's getter in the order of
// ECMAScript's `get RegExp.prototype.flags` (§22.2.6.4); one the engine lacks is undefined.
const StringPrototype = String.prototype;
const FunctionPrototypeToString = Function.prototype.toString;
const RegExpPrototype = RegExp.prototype;
const printerMethods = [
  ObjectPrototype.toString, StringPrototype.charCodeAt, StringPrototype.includes,
  StringPrototype.valueOf, Number.prototype.valueOf, Boolean.prototype.valueOf,
  Date.prototype.getTime, Date.prototype.toISOString, getterOf(Map.prototype, "size"),
  Map.prototype.forEach, Set.prototype.forEach, getterOf(Set.prototype, "size"),
  getterOf(ArrayBuffer.prototype, "byteLength"), getterOf(TypedArrayPrototype, Symbol.toStringTag),
  getterOf(RegExpPrototype, "source"), getterOf(RegExpPrototype, "hasIndices"),
  getterOf(RegExpPrototype, "global"), getterOf(RegExpPrototype, "ignoreCase"),
  getterOf(RegExpPrototype, "multiline"), getterOf(RegExpPrototype, "dotAll"),
  getterOf(RegExpPrototype, "unicode"), getterOf(RegExpPrototype, "unicodeSets"),
  getterOf(RegExpPrototype, "sticky"),
];

// The engine's `stack` is an accessor on Error.prototype (native: it runs no program code).
// Its text names positions in the code the engine runs, which is the program wrapped and
// marked: the getter programs see puts them in the program's own lines and columns (the
// host maps them), keeping the engine's setter. It runs no program code either. The host
// reads the engine's own text (`ErrorStackNative`) for a run's error, and maps it itself.
const ErrorStackNative = getterOf(Error.prototype, "stack");
let ErrorStackGetter;
if (typeof ErrorStackNative === "function") {
  const inSource = host.programStack;
  const get = {
    get stack() {
      const text = ReflectApply(ErrorStackNative, this, []);
      return typeof text === "string" ? inSource(text) : text;
    },
  };
  ErrorStackGetter = getterOf(get, "stack");
  // Only the getter is given: the engine's setter, enumerability and configurability stay.
  ObjectDefineProperty(Error.prototype, "stack", { __proto__: null, get: ErrorStackGetter });
}

// What the host reads (by name).
internals.primordials = {
  __proto__: null,
  ObjectPrototype, ArrayPrototype, Promise, BigInt, Map, Set, WeakMap, WeakSet, WeakRef,
  ArrayBuffer, RegExp, ArrayBufferIsView, ObjectHasOwn, ArrayIsArray,
  ObjectGetPrototypeOf, ErrorStackNative, FunctionPrototypeToString, weakMapGet,
  stringToWellFormed,
};
