// setTimeout / clearTimeout / setInterval / clearInterval, run by the host's event loop
// and bounded by the run's deadline. A callback that throws ends the run with that error,
// as an uncaught exception would end a Node process.
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
