// setTimeout / clearTimeout / setInterval / clearInterval, run by the host's event loop
// and bounded by the run's deadline. A callback that throws ends the run with that error,
// as an uncaught exception would end a Node process. And `performance`, whose clock starts
// with the run.
"use strict";

const H = host;

// The table and the calls live in 42_timer_table.js, loaded at the first call of any of
// the four (a run that sets no timer never pays for it).
let table;
function timers() {
  if (table === undefined) {
    table = H.load("timers", { __proto__: null, ObjectCreate, Number, TypeError, ReflectApply });
    // The host fires timers through the table's own `fire` (no timer is set before this).
    internals.fireTimer = table.fire;
  }
  return table;
}

internals.setTimeout = function setTimeout(callback, ms, ...args) {
  return timers().start(callback, ms, args, false);
};
internals.setInterval = function setInterval(callback, ms, ...args) {
  return timers().start(callback, ms, args, true);
};
internals.clearTimeout = function clearTimeout(id) {
  timers().stop(id);
};
internals.clearInterval = function clearInterval(id) {
  timers().stop(id);
};

// The run's clock and random numbers. A run that may pause (src/sandbox/journal.rs) reads
// both from the host, which records them, so that the run resumed later replays the same
// readings and numbers: `Date.now()`, `new Date()`, `Date()`, `performance.now()` and
// `Math.random()`. Any other run reads the engine's own, untouched. `startClock(journaled)`
// says which, before the program runs.
let journaled = false;

// `performance`: the engine's own counts from when the engine was built, which for a warm
// engine is long before its run (and would tell the program how long the host was idle).
// This one starts when the host starts the run (`startClock`): `now()` counts milliseconds
// from there, and `timeOrigin` is that moment in milliseconds since the epoch, as in the
// High Resolution Time spec.
// `origin` and `timeOrigin` are set by `startClock`, which the host calls before the
// program runs.
let origin = 0;
const performance = {};
ObjectDefineProperty(performance, "now", {
  value: function now() {
    return (journaled ? H.clock() : ReflectApply(enginePerformanceNow, enginePerformance, [])) - origin;
  },
  enumerable: true,
});
ObjectDefineProperty(globalThis, "performance", {
  value: performance,
  writable: true,
  enumerable: true,
  configurable: true,
});
internals.startClock = function startClock(isJournaled) {
  journaled = isJournaled === true;
  if (journaled) {
    // 41_journal_clock.js puts the host's clock and random numbers in front of the engine's.
    // No program code has run yet: the two built-ins only it uses are read here.
    H.load("journalClock", {
      __proto__: null,
      Date, Math, Proxy, global: globalThis, clock: H.clock, random: H.random, MathFloor,
      ObjectDefineProperty, ReflectConstruct: Reflect.construct,
      DatePrototypeToString: uncurryThis(Date.prototype.toString),
    });
  }
  origin = journaled ? H.clock() : ReflectApply(enginePerformanceNow, enginePerformance, []);
  ObjectDefineProperty(performance, "timeOrigin", {
    value: journaled ? origin : DateNow(),
    enumerable: true,
    writable: false,
    configurable: false,
  });
};
