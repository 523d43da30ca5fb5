// The full checks of the array guards (35_guards.js), loaded the first time a guarded call
// is not on a plain array of modest length: `function (P)` returns `check(name, self,
// args)`, which throws the guard's RangeError when the call would visit more indices than
// `P.limit` (a default sort: more than `P.SORT_LIMIT` elements), and otherwise returns;
// `flatMap`'s callback in `args[0]` is replaced by one that checks what it returns.
"use strict";

const {
  isProxy, limit, SORT_LIMIT, ObjectGetOwnPropertyDescriptor, ObjectHasOwn,
  ObjectGetPrototypeOf, ArrayIsArray, ReflectApply, TypedArrayPrototypeGetLength, MathFloor,
  Number, Object, RangeError, WeakMap, WeakMapPrototypeGet, WeakMapPrototypeSet,
  SymbolIsConcatSpreadable,
} = P;
const MAX_LENGTH = 9007199254740991;
// A length or index that only program code could tell.
const UNKNOWN = -1;

// Whether converting `v` to a number could run program code (or throw).
function opaque(v) {
  const t = typeof v;
  return (t === "object" && v !== null) || t === "function" || t === "symbol" || t === "bigint";
}

// ECMAScript ToLength (§7.1.20) of a primitive; UNKNOWN for anything else.
function toLength(v) {
  if (opaque(v)) return UNKNOWN;
  const n = Number(v);
  if (!(n > 0)) return 0;
  return n >= MAX_LENGTH ? MAX_LENGTH : MathFloor(n);
}

// The `length` the built-in will read from `o`, when reading it runs no program code;
// UNKNOWN when it would (a getter, a proxy, an object to convert).
function peekLength(o) {
  if (o === null || o === undefined) return 0; // the built-in throws its TypeError itself
  let obj = typeof o === "object" || typeof o === "function" ? o : Object(o);
  while (obj !== null) {
    if (isProxy(obj)) return UNKNOWN;
    const d = ObjectGetOwnPropertyDescriptor(obj, "length");
    if (d !== undefined) {
      return ObjectHasOwn(d, "value") ? toLength(d.value) : UNKNOWN;
    }
    obj = ObjectGetPrototypeOf(obj);
  }
  return 0;
}

// A relative index as the built-ins compute it (ToIntegerOrInfinity, then from the end when
// negative, clamped to [0, len]); `absent` when `v` is undefined; UNKNOWN when converting
// `v` could run program code.
function relative(v, len, absent) {
  if (v === undefined) return absent;
  if (opaque(v)) return UNKNOWN;
  let n = Number(v);
  if (n !== n) n = 0;
  n = n < 0 ? -MathFloor(-n) : MathFloor(n);
  if (n < 0) return len + n < 0 ? 0 : len + n;
  return n > len ? len : n;
}

// The delete count of `splice`/`toSpliced` (the second argument, clamped to what follows
// `start`); UNKNOWN as for `relative`.
function deleteCount(args, len, start) {
  if (args.length === 0) return 0;
  if (args.length === 1) return len - start;
  const v = args[1];
  if (opaque(v)) return UNKNOWN;
  let n = Number(v);
  n = n > 0 ? MathFloor(n) : 0;
  return n > len - start ? len - start : n;
}

// The argument at `i`, undefined when not passed: `args` is the wrapper's rest array, and an
// index past its length would read `Array.prototype` and `Object.prototype`.
const arg = (args, i) => (i < args.length ? args[i] : undefined);

function refuse(name, length) {
  return new RangeError(
    name + "() on a length of " + length + " is refused: no array that long fits in the sandbox's memory",
  );
}

function refuseSort(len) {
  return new RangeError("sort() without a comparator on " + len + " elements is refused: pass a comparator (at most " + SORT_LIMIT + " elements sort without one)");
}

const whole = (self) => peekLength(self);

// `flat` visits the elements of nested arrays up to its depth: each nested array is
// checked as the array itself is. `seen` maps each array checked to the depth it was
// checked to, so that an array met again (an array that holds itself, or one held many
// times) is checked again only to a greater depth: the checks stay linear in the arrays.
function checkNested(array, depth, name, seen) {
  const n = peekLength(array);
  for (let i = 0; i < n; i++) {
    const d = ObjectGetOwnPropertyDescriptor(array, i);
    if (d === undefined || !ObjectHasOwn(d, "value")) continue;
    const e = d.value;
    if (ArrayIsArray(e) && !isProxy(e)) {
      const len = peekLength(e);
      if (len > limit) throw refuse(name, len);
      if (depth > 1) {
        const checked = WeakMapPrototypeGet(seen, e);
        if (checked === undefined || checked < depth - 1) {
          WeakMapPrototypeSet(seen, e, depth - 1);
          checkNested(e, depth - 1, name, seen);
        }
      }
    }
  }
}

// Whether `concat` spreads `o` (ECMAScript IsConcatSpreadable, §23.1.3.1.1): its own or
// inherited `Symbol.isConcatSpreadable` when that is a data property other than undefined,
// else whether it is an array. True when only program code could tell (a getter, a proxy
// on the way), so that its length is counted.
function spreads(o) {
  if (o === null || (typeof o !== "object" && typeof o !== "function")) return false;
  for (let obj = o; obj !== null; obj = ObjectGetPrototypeOf(obj)) {
    if (isProxy(obj)) return true;
    const d = ObjectGetOwnPropertyDescriptor(obj, SymbolIsConcatSpreadable);
    if (d === undefined) continue;
    if (!ObjectHasOwn(d, "value")) return true;
    if (d.value !== undefined) return !!d.value;
    break;
  }
  return ArrayIsArray(o);
}

// For each guarded method, the number of indices a call would visit, or UNKNOWN to let it
// run. `Array.prototype.toString` calls `this.join`, so it is guarded through `join`.
const work = {
  __proto__: null,
  join: whole,
  toLocaleString: whole,
  reverse: whole,
  shift: whole,
  unshift: (self, args) => (args.length === 0 ? 0 : peekLength(self)),
  slice(self, args) {
    const len = peekLength(self);
    if (len <= limit) return len;
    const k = relative(arg(args, 0), len, 0);
    const final = relative(arg(args, 1), len, len);
    if (k === UNKNOWN || final === UNKNOWN) return len;
    return final > k ? final - k : 0;
  },
  copyWithin(self, args) {
    const len = peekLength(self);
    if (len <= limit) return len;
    const to = relative(arg(args, 0), len, 0);
    const from = relative(arg(args, 1), len, 0);
    const final = relative(arg(args, 2), len, len);
    if (to === UNKNOWN || from === UNKNOWN || final === UNKNOWN) return len;
    const count = final - from < len - to ? final - from : len - to;
    return count > 0 ? count : 0;
  },
  splice(self, args) {
    const len = peekLength(self);
    if (len <= limit) return len;
    const start = relative(args.length === 0 ? 0 : args[0], len, 0);
    if (start === UNKNOWN) return len;
    const removed = deleteCount(args, len, start);
    if (removed === UNKNOWN) return len;
    const items = args.length > 2 ? args.length - 2 : 0;
    // The removed elements are copied out; the rest move only when the count changes.
    return removed + items + (items === removed ? 0 : len - start - removed);
  },
  toSpliced(self, args) {
    const len = peekLength(self);
    if (len <= limit) return len;
    const start = relative(args.length === 0 ? 0 : args[0], len, 0);
    if (start === UNKNOWN) return len;
    const skipped = deleteCount(args, len, start);
    if (skipped === UNKNOWN) return len;
    // The new array is built index by index.
    return len - skipped + (args.length > 2 ? args.length - 2 : 0);
  },
  sort(self, args) {
    const len = peekLength(self);
    if (len <= limit && arg(args, 0) === undefined && len > SORT_LIMIT) throw refuseSort(len);
    return len;
  },
  typedArraySort(self, args) {
    let len = 0;
    try {
      len = TypedArrayPrototypeGetLength(self);
    } catch {
      return 0; // not a typed array: the built-in throws its TypeError
    }
    if (arg(args, 0) === undefined && len > SORT_LIMIT) throw refuseSort(len);
    return 0;
  },
  // Only what is spread counts: `this` (as an object) and each argument.
  concat(self, args) {
    for (let i = 0; i < args.length; i++) {
      if (spreads(args[i])) {
        const n = peekLength(args[i]);
        if (n > limit) throw refuse("concat", n);
      }
    }
    if (self === null || self === undefined) return 0; // the built-in throws its TypeError
    const o = typeof self === "object" || typeof self === "function" ? self : Object(self);
    return spreads(o) ? peekLength(o) : 0;
  },
  flat(self, args) {
    const len = peekLength(self);
    if (len > limit) return len;
    const d = arg(args, 0);
    const depth = d === undefined ? 1 : opaque(d) ? 1 : Number(d);
    if (depth >= 1 && !isProxy(self)) checkNested(self, depth > 64 ? 64 : depth, "flat", new WeakMap());
    return len;
  },
  // `flatMap` flattens what its callback returns: each returned array is checked before the
  // built-in visits it. The callback is called as the built-in calls it (same `this` and
  // arguments); only its identity differs.
  flatMap(self, args) {
    const fn = arg(args, 0);
    if (typeof fn === "function") {
      args[0] = function (...a) {
        const r = ReflectApply(fn, this, a);
        if (ArrayIsArray(r)) {
          const n = peekLength(r);
          if (n > limit) throw refuse("flatMap", n);
        }
        return r;
      };
    }
    return peekLength(self);
  },
};

return (name, self, args) => {
  if (work[name](self, args) > limit) {
    throw refuse(name === "typedArraySort" ? "sort" : name, peekLength(self));
  }
};
