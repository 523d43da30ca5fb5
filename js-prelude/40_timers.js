// setTimeout / clearTimeout / setInterval / clearInterval, run by the host's event loop
// and bounded by the run's deadline. A callback that throws ends the run with that error,
// as an uncaught exception would end a Node process. And `performance`, whose clock starts
// with the run.
"use strict";

const P = internals.primordials;
const H = internals.host;
const { ObjectCreate, ReflectApply, ArrayPrototypeSlice, Number, TypeError } = P;

const timers = ObjectCreate(null);
let nextId = 1;

function delayOf(ms) {
  const n = Number(ms);
  return n > 0 ? n : 0;
}

function start(callback, ms, args, repeat) {
  if (typeof callback !== "function") {
    throw new TypeError("the callback must be a function");
  }
  const id = nextId++;
  const delay = delayOf(ms);
  timers[id] = { callback, args, repeat, delay };
  H.setTimer(id, delay);
  return id;
}

function stop(id) {
  if (timers[id] !== undefined) {
    delete timers[id];
    H.clearTimer(id);
  }
}

internals.setTimeout = function setTimeout(callback, ms, ...args) {
  return start(callback, ms, args, false);
};
internals.setInterval = function setInterval(callback, ms, ...args) {
  return start(callback, ms, args, true);
};
internals.clearTimeout = function clearTimeout(id) {
  stop(id);
};
internals.clearInterval = function clearInterval(id) {
  stop(id);
};

internals.fireTimer = function fireTimer(id) {
  const timer = timers[id];
  if (timer === undefined) return;
  if (timer.repeat) {
    H.setTimer(id, timer.delay);
  } else {
    delete timers[id];
  }
  ReflectApply(timer.callback, undefined, timer.args);
};

// `performance`: the engine's own counts from when the engine was built, which for a warm
// engine is long before its run (and would tell the program how long the host was idle).
// This one starts when the host starts the run (`startClock`): `now()` counts milliseconds
// from there, and `timeOrigin` is that moment in milliseconds since the epoch, as in the
// High Resolution Time spec.
const nativeNow = P.performanceNow;
let origin = nativeNow();
const performance = {};
P.ObjectDefineProperty(performance, "now", {
  value: function now() {
    return nativeNow() - origin;
  },
  enumerable: true,
  writable: false,
  configurable: false,
});
P.ObjectDefineProperty(performance, "timeOrigin", { value: 0, enumerable: true, configurable: true });
P.ObjectDefineProperty(P.globalThis, "performance", {
  value: performance,
  writable: true,
  enumerable: true,
  configurable: true,
});
internals.startClock = function startClock() {
  origin = nativeNow();
  P.ObjectDefineProperty(performance, "timeOrigin", {
    value: P.DateNow(),
    enumerable: true,
    writable: false,
    configurable: false,
  });
};
