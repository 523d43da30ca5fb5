// The bridge to the host. `host` is an object of native functions made for this run:
//   call(toolIndex, args, primordials, reply, Object.prototype) -> the result's value when
//     the call finished at once, else `reply` filled in (`id` of the call in flight, or
//     `id` 0 and `error`); throws when the call cannot start
//   unknownTool(name) -> message naming the available tools
//   log(level, text)
//   loadInspect(primordials) -> { formatArgs, inspect } (31_inspect.js)
//   setTimer(id, milliseconds), clearTimer(id)
//   toolNames: [[name, alias], ...]
//   maxArrayLength: the longest array the memory limit can hold
// They are captured here; nothing reaches the program's global scope from this file.
"use strict";

const P = internals.primordials;

internals.host = P.ObjectFreeze({
  call: host.call,
  unknownTool: host.unknownTool,
  log: host.log,
  loadInspect: host.loadInspect,
  setTimer: host.setTimer,
  clearTimer: host.clearTimer,
  toolNames: host.toolNames,
});
