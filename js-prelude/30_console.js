// `console.log/info/debug/warn/error` (and `console.dir`): arguments are formatted by the
// inspect module (31_inspect.js, loaded on first use), then handed to the host with their
// level. Lone surrogates become U+FFFD (the host takes UTF-8 text).
"use strict";

const H = host;

let formatter;
function format() {
  if (formatter === undefined) {
    formatter = H.load("inspect", {
      __proto__: null,
      ObjectCreate, ObjectGetOwnPropertyNames, ObjectGetOwnPropertySymbols,
      ObjectGetOwnPropertyDescriptor, ObjectGetPrototypeOf, ObjectSetPrototypeOf, ObjectIs,
      ObjectHasOwn, ReflectApply, ArrayIsArray, String, Number, Symbol, TypeError, RangeError,
      RegExp, MathMin, MathFloor, ArrayBufferIsView, ErrorStackGetter, FunctionPrototypeToString,
      StringPrototypeSlice: uncurryThis(stringSlice),
      StringPrototypeToWellFormed: uncurryThis(stringToWellFormed),
      TypedArrayPrototypeGetLength: uncurryThis(typedArrayLength), printerMethods,
    });
  }
  return formatter;
}

// Each method is written out (a method definition names its function, with nothing to
// build at run time).
const console = {
  __proto__: ObjectPrototype,
  log(...args) {
    H.log("log", format().formatArgs(args));
  },
  info(...args) {
    H.log("info", format().formatArgs(args));
  },
  debug(...args) {
    H.log("debug", format().formatArgs(args));
  },
  warn(...args) {
    H.log("warn", format().formatArgs(args));
  },
  error(...args) {
    H.log("error", format().formatArgs(args));
  },
  dir(value) {
    H.log("log", format().inspect(value));
  },
};

internals.console = ObjectFreeze(console);
// What the host shows (a result that is not JSON, an unhandled rejection's reason) is
// shown by the printer's `inspect`, which the host reaches through this.
internals.format = format;
