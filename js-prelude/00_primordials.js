// Built-ins captured before any program code runs (the idea of deno_core's primordials):
// a program that later replaces `Promise`, `JSON`, `Object.prototype` or
// `Array.prototype.map` changes nothing the prelude or the host relies on.
//
// Loaded as the body of `function (host, internals) { ... }`.
"use strict";

const uncurryThis = (fn) => Function.prototype.bind.call(Function.prototype.call, fn);

const P = Object.create(null);
P.Object = Object;
P.ObjectPrototype = Object.prototype;
P.ArrayPrototype = Array.prototype;
P.ObjectCreate = Object.create;
P.ObjectDefineProperty = Object.defineProperty;
P.ObjectFreeze = Object.freeze;
P.ObjectGetOwnPropertyNames = Object.getOwnPropertyNames;
P.ObjectGetOwnPropertySymbols = Object.getOwnPropertySymbols;
P.ObjectGetOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
P.ObjectGetPrototypeOf = Object.getPrototypeOf;
P.ObjectSetPrototypeOf = Object.setPrototypeOf;
P.ObjectIs = Object.is;
P.ObjectPrototypeToString = uncurryThis(Object.prototype.toString);
P.ObjectPrototypeHasOwnProperty = uncurryThis(Object.prototype.hasOwnProperty);
P.ReflectApply = Reflect.apply;
P.ReflectConstruct = Reflect.construct;
P.ArrayIsArray = Array.isArray;
P.ArrayPrototypePush = uncurryThis(Array.prototype.push);
P.ArrayPrototypeJoin = uncurryThis(Array.prototype.join);
P.ArrayPrototypeSlice = uncurryThis(Array.prototype.slice);
P.FunctionPrototypeToString = uncurryThis(Function.prototype.toString);
// Whether `fn` is a class: its source starts with the keyword `class`, then (past white
// space and comments) a name, `extends` or `{`; a method named `class` has `(` there.
// Calling a class is rejected. False for what cannot tell (a bound class, a proxy).
const isSpace = (c) =>
  (c >= 0x09 && c <= 0x0d) || c === 0x20 || c === 0xa0 || c === 0x1680 ||
  (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f ||
  c === 0x205f || c === 0x3000 || c === 0xfeff;
P.isClass = (fn) => {
  let source;
  try {
    source = P.FunctionPrototypeToString(fn);
  } catch {
    return false;
  }
  if (!P.StringPrototypeStartsWith(source, "class")) return false;
  const at = (i) => P.StringPrototypeCharCodeAt(source, i);
  let i = 5;
  if (!(isSpace(at(i)) || at(i) === 0x2f || at(i) === 0x7b)) return false; // `classes`
  for (;;) {
    if (isSpace(at(i))) {
      i++;
    } else if (at(i) === 0x2f && at(i + 1) === 0x2a) { // /* … */
      const end = P.StringPrototypeIndexOf(source, "*/", i + 2);
      if (end < 0) return false;
      i = end + 2;
    } else if (at(i) === 0x2f && at(i + 1) === 0x2f) { // // … line end
      while (i < source.length && at(i) !== 0x0a && at(i) !== 0x0d && at(i) !== 0x2028 && at(i) !== 0x2029) i++;
    } else {
      return at(i) !== 0x28; // `(`: a method named `class`
    }
  }
};
P.String = String;
P.StringPrototypeSlice = uncurryThis(String.prototype.slice);
P.StringPrototypeCharCodeAt = uncurryThis(String.prototype.charCodeAt);
P.StringPrototypePadStart = uncurryThis(String.prototype.padStart);
P.StringPrototypeReplace = uncurryThis(String.prototype.replace);
P.StringPrototypeIncludes = uncurryThis(String.prototype.includes);
P.StringPrototypeStartsWith = uncurryThis(String.prototype.startsWith);
P.StringPrototypeIndexOf = uncurryThis(String.prototype.indexOf);
P.StringPrototypeRepeat = uncurryThis(String.prototype.repeat);
P.StringPrototypeToWellFormed = uncurryThis(String.prototype.toWellFormed);
// A regular expression's text from the engine's own accessors, which read its internal
// slots: `RegExp.prototype.toString` would read `source` and `flags` with [[Get]], and
// `flags` each flag, all of which a program can redefine on `RegExp.prototype`.
const regExpGetter = (name) => {
  const d = Object.getOwnPropertyDescriptor(RegExp.prototype, name);
  return d !== undefined && typeof d.get === "function" ? uncurryThis(d.get) : undefined;
};
const regExpSource = regExpGetter("source");
// In the order of ECMAScript's `get RegExp.prototype.flags` (§22.2.6.4): each getter, then
// its letter.
const regExpFlags = [];
const flagNames = ["hasIndices", "d", "global", "g", "ignoreCase", "i", "multiline", "m",
  "dotAll", "s", "unicode", "u", "unicodeSets", "v", "sticky", "y"];
for (let i = 0; i < flagNames.length; i += 2) {
  const get = regExpGetter(flagNames[i]);
  if (get !== undefined) {
    regExpFlags[regExpFlags.length] = get;
    regExpFlags[regExpFlags.length] = flagNames[i + 1];
  }
}
const regExpFlagCount = regExpFlags.length;
// `/source/flags` of a regular expression; throws a TypeError for an object that is not one.
P.RegExpText = (re) => {
  let flags = "";
  for (let i = 0; i < regExpFlagCount; i += 2) {
    if (regExpFlags[i](re)) flags += regExpFlags[i + 1];
  }
  return "/" + regExpSource(re) + "/" + flags;
};
P.Number = Number;
P.NumberPrototypeToString = uncurryThis(Number.prototype.toString);
P.NumberPrototypeValueOf = uncurryThis(Number.prototype.valueOf);
P.StringPrototypeValueOf = uncurryThis(String.prototype.valueOf);
P.BooleanPrototypeValueOf = uncurryThis(Boolean.prototype.valueOf);
P.BigInt = BigInt;
P.BigIntPrototypeToString = uncurryThis(BigInt.prototype.toString);
P.Symbol = Symbol;
P.SymbolPrototypeToString = uncurryThis(Symbol.prototype.toString);
P.Error = Error;
P.TypeError = TypeError;
P.RangeError = RangeError;
P.TypedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype);
// The engine's `stack` is an accessor on Error.prototype (native: it runs no program code).
const stackAccessor = Object.getOwnPropertyDescriptor(Error.prototype, "stack");
P.ErrorStackGetter = stackAccessor !== undefined ? stackAccessor.get : undefined;
P.Promise = Promise;
P.PromiseReject = Promise.reject.bind(Promise);
P.PromiseResolve = Promise.resolve.bind(Promise);
P.Proxy = Proxy;
P.Map = Map;
P.MapPrototypeForEach = uncurryThis(Map.prototype.forEach);
P.MapPrototypeGetSize = uncurryThis(Object.getOwnPropertyDescriptor(Map.prototype, "size").get);
P.MapPrototypeSet = uncurryThis(Map.prototype.set);
P.MapPrototypeDelete = uncurryThis(Map.prototype.delete);
P.MapPrototypeClear = uncurryThis(Map.prototype.clear);
P.Set = Set;
P.SetPrototypeForEach = uncurryThis(Set.prototype.forEach);
P.SetPrototypeGetSize = uncurryThis(Object.getOwnPropertyDescriptor(Set.prototype, "size").get);
P.WeakMap = WeakMap;
P.WeakMapPrototypeGet = uncurryThis(WeakMap.prototype.get);
P.WeakMapPrototypeSet = uncurryThis(WeakMap.prototype.set);
P.WeakSet = WeakSet;
// Called with ReflectApply (only by inspect, as a check that a value is a WeakSet).
P.WeakSetPrototypeHas = WeakSet.prototype.has;
P.WeakRef = WeakRef;
P.ArrayBuffer = ArrayBuffer;
P.ArrayBufferIsView = ArrayBuffer.isView;
P.ArrayBufferPrototypeGetByteLength = uncurryThis(
  Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, "byteLength").get,
);
P.TypedArrayPrototypeGetLength = uncurryThis(
  Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), "length").get,
);
P.TypedArrayPrototypeGetSymbolToStringTag = uncurryThis(
  Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), Symbol.toStringTag).get,
);
P.Date = Date;
P.DateNow = Date.now;
P.performanceNow = Function.prototype.bind.call(performance.now, performance);
P.DatePrototypeGetTime = uncurryThis(Date.prototype.getTime);
P.DatePrototypeToISOString = uncurryThis(Date.prototype.toISOString);
P.DatePrototypeToString = uncurryThis(Date.prototype.toString);
P.Math = Math;
P.MathRandom = Math.random;
P.RegExp = RegExp;
P.JSONStringify = JSON.stringify;
P.MathMin = Math.min;
P.MathFloor = Math.floor;
P.globalThis = globalThis;

internals.primordials = Object.freeze(P);
