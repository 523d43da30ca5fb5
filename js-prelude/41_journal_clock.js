// The run's clock and random numbers for a run that may pause (src/sandbox/journal.rs),
// loaded by `startClock` (40_timers.js) before such a run's program runs: the body of
// `function (P) { … }`. It puts the host's clock (`P.clock`) and random numbers
// (`P.random`), which the host records so that the run resumed later replays the same
// readings and numbers, in front of the engine's: `Date.now()`, `new Date()`, `Date()`
// and `Math.random()` (`performance.now()` reads `P.clock` in 40_timers.js).
"use strict";

const { Date: NativeDate, Math, Proxy, global, clock, random, MathFloor, ObjectDefineProperty, ReflectConstruct, DatePrototypeToString } = P;
const dateNow = () => MathFloor(clock());
const methods = {
  now() {
    return dateNow();
  },
  random() {
    return random();
  },
};
const method = (target, name, value) => {
  ObjectDefineProperty(target, name, { value, writable: true, enumerable: false, configurable: true });
};
method(NativeDate, "now", methods.now);
method(Math, "random", methods.random);
// `new Date()` and `Date()` read the clock inside the engine: a proxy gives them the run's
// clock and passes every other use (arguments, subclasses, properties) to Date itself.
// The handler has no prototype: a trap is only what is named here, never a `get` or
// `apply` a program put on `Object.prototype`.
const DateProxy = new Proxy(NativeDate, {
  __proto__: null,
  construct(target, args, newTarget) {
    return ReflectConstruct(target, args.length === 0 ? [dateNow()] : args, newTarget);
  },
  apply() {
    return DatePrototypeToString(new NativeDate(dateNow()));
  },
});
method(NativeDate.prototype, "constructor", DateProxy);
method(global, "Date", DateProxy);
