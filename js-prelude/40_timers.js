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

// The run's clock and random numbers. A run that may pause (src/sandbox/journal.rs) reads
// both from the host, which records them, so that the run resumed later replays the same
// readings and numbers: `Date.now()`, `new Date()`, `Date()`, `performance.now()` and
// `Math.random()`. Any other run reads the engine's own. `startClock(journaled)` says which.
let journaled = false;
const nativeDateNow = P.DateNow;
const nativeRandom = P.MathRandom;
const NativeDate = P.Date;
const { MathFloor, ReflectConstruct, DatePrototypeToString, ObjectDefineProperty } = P;

function dateNow() {
  return journaled ? MathFloor(H.clock()) : nativeDateNow();
}
const methods = {
  now() {
    return dateNow();
  },
  random() {
    return journaled ? H.random() : nativeRandom();
  },
};
function method(target, name, value) {
  ObjectDefineProperty(target, name, { value, writable: true, enumerable: false, configurable: true });
}
method(NativeDate, "now", methods.now);
method(P.Math, "random", methods.random);
// `new Date()` and `Date()` read the clock inside the engine: a proxy gives them the run's
// clock and passes every other use (arguments, subclasses, properties) to Date itself.
const DateProxy = new P.Proxy(NativeDate, {
  construct(target, args, newTarget) {
    if (args.length === 0 && journaled) {
      return ReflectConstruct(target, [dateNow()], newTarget);
    }
    return ReflectConstruct(target, args, newTarget);
  },
  apply(target, thisArg, args) {
    return journaled ? DatePrototypeToString(new NativeDate(dateNow())) : ReflectApply(target, thisArg, args);
  },
});
method(NativeDate.prototype, "constructor", DateProxy);
method(P.globalThis, "Date", DateProxy);

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
    return (journaled ? H.clock() : nativeNow()) - origin;
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
internals.startClock = function startClock(isJournaled) {
  journaled = isJournaled === true;
  origin = journaled ? H.clock() : nativeNow();
  P.ObjectDefineProperty(performance, "timeOrigin", {
    value: journaled ? origin : nativeDateNow(),
    enumerable: true,
    writable: false,
    configurable: false,
  });
};
