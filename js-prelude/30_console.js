// `console.log/info/debug/warn/error` (and `console.dir`): arguments are formatted by the
// inspect module (31_inspect.js, loaded on first use), then handed to the host with their
// level. Lone surrogates become U+FFFD (the host takes UTF-8 text).
"use strict";

const H = host;

let formatter;
function format() {
  if (formatter === undefined) formatter = H.load("inspect", inspectPrimordials());
  return formatter;
}

function method(level) {
  return {
    [level](...args) {
      H.log(level, StringPrototypeToWellFormed(format().formatArgs(args)));
    },
  }[level];
}

const console = ObjectCreate(ObjectPrototype);
console.log = method("log");
console.info = method("info");
console.debug = method("debug");
console.warn = method("warn");
console.error = method("error");
console.dir = function dir(value) {
  H.log("log", StringPrototypeToWellFormed(format().inspect(value)));
};

internals.console = console;
internals.inspect = (value) => format().inspect(value);
