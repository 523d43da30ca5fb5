// The bridge to the host. `host` is an object of native functions made for this run:
//   call(name, args, primordials) -> call id   (throws when the call cannot start)
//   unknownTool(name) -> message naming the available tools
//   log(level, text)
//   setTimer(id, milliseconds), clearTimer(id)
//   toolNames: [[name, alias], ...]
// They are captured here; nothing reaches the program's global scope from this file.
"use strict";

const P = internals.primordials;

internals.host = P.ObjectFreeze({
  call: host.call,
  unknownTool: host.unknownTool,
  log: host.log,
  setTimer: host.setTimer,
  clearTimer: host.clearTimer,
  toolNames: host.toolNames,
});
