// The table behind setTimeout / clearTimeout / setInterval / clearInterval (40_timers.js
// defines the four functions, and calls these), loaded at the first call of any of them:
// the body of `function (P, engine) { … }`, which returns `{ start, stop, fire }`. `P`
// holds the primordials used here; `engine` the host's `setTimer(id, milliseconds)` and
// `clearTimer(id)`, made when this loads, which the host's event loop runs by.
"use strict";

const { ObjectCreate, Number, TypeError, ReflectApply } = P;
const { setTimer, clearTimer } = engine;

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
  timers[id] = { id, callback, args, repeat, delay };
  setTimer(id, delay);
  return id;
}

// `id` as the program gives it: a number, or anything that names one as a property key
// (read once); the host is told the timer's own number.
function stop(id) {
  const timer = timers[id];
  if (timer !== undefined) {
    delete timers[timer.id];
    clearTimer(timer.id);
  }
}

// Runs timer `id`'s callback (the host calls it when the timer is due).
function fire(id) {
  const timer = timers[id];
  if (timer === undefined) return;
  if (timer.repeat) {
    setTimer(id, timer.delay);
  } else {
    delete timers[id];
  }
  ReflectApply(timer.callback, undefined, timer.args);
}

return { __proto__: null, start, stop, fire };
