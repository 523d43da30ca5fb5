// Guards for the few built-ins whose C loops never give the interrupt handler a chance to
// stop them: on a huge sparse array or array-like (`new Array(1e9).join('')`,
// `Array.prototype.reverse.call({length: 2 ** 32 - 1})`) they would run for minutes past
// the deadline without allocating. No array longer than `host.maxArrayLength` (the memory
// limit / 8) can hold its elements in the sandbox, so such a length is refused with a
// RangeError before the loop starts. Default sorts (no comparator, so no JavaScript runs
// between comparisons) are bounded the same way at 1 048 576 elements.
"use strict";

const P = internals.primordials;
const { ObjectDefineProperty, ReflectApply, ArrayIsArray, Number, RangeError, ArrayPrototype, TypedArrayPrototype } = P;
const limit = host.maxArrayLength;
const SORT_LIMIT = 1048576;

function lengthOf(o) {
  if (o === null || o === undefined) return 0;
  let n;
  try {
    n = Number(o.length);
  } catch {
    return 0;
  }
  return n > 0 ? n : 0;
}

function refuse(name, length) {
  return new RangeError(
    `${name}() on a length of ${length} is refused: no array that long fits in the sandbox's memory`,
  );
}

function checkNested(array, depth, name) {
  const n = lengthOf(array);
  for (let i = 0; i < n; i++) {
    const e = array[i];
    if (ArrayIsArray(e)) {
      const len = lengthOf(e);
      if (len > limit) throw refuse(name, len);
      if (depth > 1) checkNested(e, depth - 1, name);
    }
  }
}

function install(target, name, check) {
  const original = target[name];
  if (typeof original !== "function") return;
  const wrapped = function (...args) {
    check(this, args);
    return ReflectApply(original, this, args);
  };
  ObjectDefineProperty(wrapped, "name", { value: name });
  ObjectDefineProperty(wrapped, "length", { value: original.length });
  // The built-in is a writable data property: assigning keeps its attributes.
  target[name] = wrapped;
}

const thisLength = (name) => (self) => {
  const len = lengthOf(self);
  if (len > limit) throw refuse(name, len);
};

for (const name of ["join", "toString", "toLocaleString", "reverse", "copyWithin", "splice", "slice",
                    "shift", "unshift", "toSpliced"]) {
  install(ArrayPrototype, name, thisLength(name));
}

install(ArrayPrototype, "sort", (self, args) => {
  const len = lengthOf(self);
  if (len > limit) throw refuse("sort", len);
  if (args[0] === undefined && len > SORT_LIMIT) {
    throw new RangeError(`sort() without a comparator on ${len} elements is refused: pass a comparator (at most ${SORT_LIMIT} elements sort without one)`);
  }
});
install(TypedArrayPrototype, "sort", (self, args) => {
  const len = lengthOf(self);
  if (args[0] === undefined && len > SORT_LIMIT) {
    throw new RangeError(`sort() without a comparator on ${len} elements is refused: pass a comparator (at most ${SORT_LIMIT} elements sort without one)`);
  }
});

install(ArrayPrototype, "concat", (self, args) => {
  const len = lengthOf(self);
  if (len > limit) throw refuse("concat", len);
  for (let i = 0; i < args.length; i++) {
    if (ArrayIsArray(args[i])) {
      const n = lengthOf(args[i]);
      if (n > limit) throw refuse("concat", n);
    }
  }
});

for (const name of ["flat", "flatMap"]) {
  install(ArrayPrototype, name, (self, args) => {
    const len = lengthOf(self);
    if (len > limit) throw refuse(name, len);
    const depth = name === "flat" ? (args[0] === undefined ? 1 : Number(args[0])) : 1;
    if (depth >= 1) checkNested(self, depth > 64 ? 64 : depth, name);
  });
}
