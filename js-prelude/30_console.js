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

// Each method is written out (a method definition names its function, with nothing to
// build at run time).
const console = {
  __proto__: ObjectPrototype,
  log(...args) {
    H.log("log", StringPrototypeToWellFormed(format().formatArgs(args)));
  },
  info(...args) {
    H.log("info", StringPrototypeToWellFormed(format().formatArgs(args)));
  },
  debug(...args) {
    H.log("debug", StringPrototypeToWellFormed(format().formatArgs(args)));
  },
  warn(...args) {
    H.log("warn", StringPrototypeToWellFormed(format().formatArgs(args)));
  },
  error(...args) {
    H.log("error", StringPrototypeToWellFormed(format().formatArgs(args)));
  },
  dir(value) {
    H.log("log", StringPrototypeToWellFormed(format().inspect(value)));
  },
};

internals.console = console;
// What the host shows (a result that is not JSON, an unhandled rejection's reason): as
// `console.log` shows it, lone surrogates as U+FFFD.
internals.inspect = (value) => StringPrototypeToWellFormed(format().inspect(value));
