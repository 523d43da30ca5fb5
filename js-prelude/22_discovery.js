// `tools.$search(query, limit?)` and `tools.$describe(names)` (see "Many tools" in the
// README), and what reading a name that is no tool gives, loaded the first time one of
// them is needed (20_tools.js defines the two functions and the proxy behind `tools`, and
// calls these): the body of `function (P, engine) { … }`, which returns
// `{ search, describe, unknown }`. `P` holds the primordials and the prelude's own pieces
// used here; `engine` the host's `searchTools(query, limit)` and `describeTools(names)`,
// made when this loads.
//
// The inputs are checked here, before the host copies anything: a query's length (in
// UTF-16 code units, as JavaScript counts it) at most 1 000, a name's at most 256 (a tool
// name has at most 128 characters, each at most 2 units), at most 500 names. Neither makes
// a call; a failure is a promise rejected with a `ToolCallError`.
"use strict";

const {
  Error, ToolCallError, messageOf, Promise, promiseResolve, promiseReject,
  ObjectDefineProperty, ArrayIsArray, ReflectApply, ErrorStackNative, stringSlice,
  stringToWellFormed, weakMapSet, sites, unknownTool,
} = P;
const PromiseResolve = (value) => ReflectApply(promiseResolve, Promise, [value]);
const PromiseReject = (reason) => ReflectApply(promiseReject, Promise, [reason]);
const { searchTools, describeTools } = engine;
const MAX_QUERY = 1000;
const MAX_NAME = 256;
const MAX_NAMES = 500;

function search(query, limit) {
  try {
    if (typeof query !== "string") throw new Error("expected the query as a string of words");
    if (query.length > MAX_QUERY) throw new Error("a query's length is at most " + MAX_QUERY);
    let most = 0;
    if (limit !== undefined) {
      if (typeof limit !== "number" || !(limit >= 1)) {
        throw new Error("limit: expected a number of results, 1 or more (at most 50 are given)");
      }
      most = limit;
    }
    return PromiseResolve(searchTools(query, most));
  } catch (e) {
    return PromiseReject(new ToolCallError("$search", messageOf(e)));
  }
}

function describe(names) {
  try {
    // Own data properties, so no setter of Array.prototype sees or changes them.
    const list = [];
    const add = (i, name) => {
      if (typeof name !== "string") {
        throw new Error("expected a tool name (a string) or an array of tool names");
      }
      if (name.length > MAX_NAME) {
        throw new Error("no tool has a name of length " + name.length + ": tool names have at most 128 characters");
      }
      ObjectDefineProperty(list, i, { __proto__: null, value: name, writable: true, enumerable: true, configurable: true });
    };
    if (ArrayIsArray(names)) {
      const n = names.length;
      if (!(n <= MAX_NAMES)) throw new Error("describe at most " + MAX_NAMES + " tools at once");
      for (let i = 0; i < n; i++) add(i, names[i]);
    } else {
      add(0, names);
    }
    return PromiseResolve(describeTools(list));
  } catch (e) {
    return PromiseReject(new ToolCallError("$describe", messageOf(e)));
  }
}

// Names that generic code probes on any object: the names of `Object.prototype` and what
// promise, JSON, test and inspection code looks for. They are never tools, and reading them
// gives `undefined` instead of an error. A switch, so that nothing is built for them.
function isProbe(key) {
  switch (key) {
    case "constructor": case "__proto__": case "toString": case "toLocaleString":
    case "valueOf": case "hasOwnProperty": case "isPrototypeOf": case "propertyIsEnumerable":
    case "__defineGetter__": case "__defineSetter__": case "__lookupGetter__":
    case "__lookupSetter__":
    case "then": case "catch": case "finally": case "toJSON": case "prototype": case "inspect":
    case "length": case "name": case "asymmetricMatch": case "$$typeof": case "nodeType":
    case "tagName": case "@@__IMMUTABLE_ITERABLE__@@":
      return true;
    default:
      return false;
  }
}

// Reading `key` from `tools` where no tool has that name: `undefined` for a symbol or a
// probe; for any other name, throws a ToolCallError that lists the tools, and records the
// engine's stack text where the program named it (`sites`: the host takes the program's
// first frame from it).
function unknown(key) {
  if (typeof key === "symbol" || isProbe(key)) return undefined;
  // No tool name is longer than 128 characters: a longer key is named by its start.
  const shown = key.length > 128 ? ReflectApply(stringSlice, key, [0, 40]) + "…" : key;
  // A lone surrogate (no tool name has one) is shown as U+FFFD.
  const error = new ToolCallError(shown, unknownTool(ReflectApply(stringToWellFormed, key, [])));
  const stack = ReflectApply(ErrorStackNative, new Error(), []);
  if (typeof stack === "string") ReflectApply(weakMapSet, sites, [error, stack]);
  throw error;
}

return { __proto__: null, search, describe, unknown };
