// The `tools` object and `ToolCallError` (see "Programs" in the README).
//
// `tools.<name>(args)` returns a promise that settles with the tool's canonical JSON value
// after the whole dispatch pipeline, or rejects with a `ToolCallError` whose only fields are
// `name`, `toolName` and `message`. Only registered names dispatch: `tools.then`,
// `tools.toString`, `tools.constructor` and the other names of `Object.prototype` are
// `undefined` (so `await tools` does not hang); any other unknown name throws a
// `ToolCallError` that lists the available tools.
"use strict";

const H = host;

// The descriptor has no prototype: a getter a program put on `Object.prototype` (`get`,
// `value`) is neither read nor run when a call fails. One descriptor serves every field:
// its value is set just before each definition, after `String` (which may run program
// code) has returned.
const field = { __proto__: null, value: undefined, enumerable: true, configurable: true, writable: true };
class ToolCallError extends Error {
  constructor(toolName, message) {
    super();
    delete this.stack;
    field.value = "ToolCallError";
    ObjectDefineProperty(this, "name", field);
    field.value = String(toolName);
    ObjectDefineProperty(this, "toolName", field);
    field.value = String(message);
    ObjectDefineProperty(this, "message", field);
    field.value = undefined;
  }
}
// A property defined with only its value is neither writable, enumerable nor configurable.
ObjectDefineProperty(ToolCallError.prototype, "name", { value: "ToolCallError" });
// No frames (they would show only the prelude's own functions, not the program), and no
// own property beyond the three fields.
ObjectDefineProperty(ToolCallError.prototype, "stack", { value: "" });
ObjectFreeze(ToolCallError.prototype);
ObjectFreeze(ToolCallError);

function messageOf(error) {
  try {
    if (error !== null && typeof error === "object" && typeof error.message === "string") {
      return error.message;
    }
    return String(error);
  } catch {
    return "the call could not start";
  }
}

// Where each ToolCallError the host made surfaced: the number of the await the program
// had last reached when the call failed (the host numbers them), so that a run ending with
// it, even rethrown later, names that line. For an unknown tool, the engine's stack text
// where the program named it (the host takes the program's first frame). The host reads
// it with the original `WeakMap.prototype.get` (`internals.primordials`).
const sites = new WeakMap();
internals.sites = sites;

// The host calls these from a tool function (see `host.tools`): the rejection of a
// call that failed before or while starting (`error` is a message, or what a conversion
// threw), and the error a call in flight rejects with; `site` as above.
internals.failed = function failed(name, error, site) {
  const rejection = new ToolCallError(name, messageOf(error));
  if (site > 0) ReflectApply(weakMapSet, sites, [rejection, site]);
  return ReflectApply(promiseReject, Promise, [rejection]);
};
internals.toolError = function toolError(name, message, site) {
  const error = new ToolCallError(name, message);
  if (site > 0) ReflectApply(weakMapSet, sites, [error, site]);
  return error;
};

// What tells the available tools (see "Many tools" in the README): `tools.$search` and
// `tools.$describe`, and the error for a name that is no tool. Its code (22_discovery.js)
// loads the first time one of them is needed.
let discovery;
function discover() {
  if (discovery === undefined) {
    discovery = H.load("discovery", {
      __proto__: null,
      Error, ToolCallError, messageOf, Promise, promiseResolve, promiseReject,
      ObjectDefineProperty, ArrayIsArray, ReflectApply, ErrorStackNative, stringSlice,
      stringToWellFormed, weakMapSet, sites, unknownTool: H.unknownTool,
    });
  }
  return discovery;
}

// Reading a name that is not a tool reaches this proxy (the prototype of `tools`): names
// that generic code probes on any object give `undefined`, anything else throws a
// ToolCallError that lists the tools (`unknown` in 22_discovery.js).
const unknown = new Proxy(ObjectCreate(null), ObjectFreeze({
  __proto__: null,
  get(t, key) {
    return discover().unknown(key);
  },
}));

// The tools are own properties (a plain property read, no trap), frozen. Each is a native
// function of the host that returns a promise; the host defines them (under each tool's
// name, and its alias when that differs).
const tools = H.tools;
ObjectSetPrototypeOf(tools, unknown);
// `$search` and `$describe` are no tool's name (the registry refuses them), not enumerable,
// and make no call.
// A module that cannot load (at the bottom of a deep recursion, say) rejects the call, as
// a failure inside it would.
ObjectDefineProperty(tools, "$search", {
  value: function $search(query, limit) {
    try {
      discover();
    } catch (e) {
      return ReflectApply(promiseReject, Promise, [new ToolCallError("$search", messageOf(e))]);
    }
    return discovery.search(query, limit);
  },
});
ObjectDefineProperty(tools, "$describe", {
  value: function $describe(names) {
    try {
      discover();
    } catch (e) {
      return ReflectApply(promiseReject, Promise, [new ToolCallError("$describe", messageOf(e))]);
    }
    return discovery.describe(names);
  },
});
ObjectFreeze(tools);

internals.tools = tools;
internals.ToolCallError = ToolCallError;
