// The formatter behind `console.*`, like Node's `util.inspect` (depth 2, at most 100 array
// items, cycles as `[Circular *1]`, getters shown, not run). Loaded on the first console
// call (or the first value the host must show), not with every run: most of its cost is
// compiling, and programs that never log never pay it.
//
// Loaded as the body of `function (P, engine) { … }`, P being the primordials and `engine`
// the checks only the engine can make without running program code (`proxyTarget`,
// `kindOf`: see `load_inspect` in src/sandbox/prelude.rs); returns
// `{ formatArgs, inspect }`.
//
// It runs no program code the program did not ask for (issue 15, item 7): built-ins come
// from the primordials, its own lists have no prototype (an indexed setter on
// `Array.prototype` or `Object.prototype` never sees them), and it reads properties through
// their descriptors, own members only (a getter on `Object.prototype` named `get` or
// `value` never runs). What a value is comes from the engine (`engine.kindOf`, the class of
// the object), never from `instanceof`, `Symbol.toStringTag` or a proxy's traps, and never
// from a built-in that throws for the wrong kind (a thrown error would call the program's
// `Error.prepareStackTrace`): a proxy is shown as its target, as Node shows it.
// No template literal either: QuickJS builds one with `String.prototype.concat`, which a
// program can replace.
"use strict";

// The methods 00_primordials.js captured for this module (`printerMethods`), in its order,
// each made `method(self, ...args)` here; then the RegExp accessors (`source`, and each
// flag's getter in the order of ECMAScript's `get RegExp.prototype.flags`, §22.2.6.4).
// What plain operators do (a list's next item, text joined, a number's or a symbol's
// `String`) is done with them, not with a captured method: each captured one costs every
// run.
const PRINTER_METHODS = [
  "ObjectPrototypeToString", "StringPrototypeCharCodeAt", "StringPrototypeIncludes",
  "StringPrototypeValueOf", "NumberPrototypeValueOf", "BooleanPrototypeValueOf",
  "DatePrototypeGetTime", "DatePrototypeToISOString", "MapPrototypeGetSize",
  "MapPrototypeForEach", "SetPrototypeForEach", "SetPrototypeGetSize",
  "ArrayBufferPrototypeGetByteLength", "TypedArrayPrototypeGetSymbolToStringTag",
];
const REGEXP_FLAGS = "dgimsuvy";
const methods = P.printerMethods;
const ReflectApply = P.ReflectApply;
if (methods.length !== PRINTER_METHODS.length + 1 + REGEXP_FLAGS.length) {
  throw new P.TypeError("the prelude's printerMethods do not match PRINTER_METHODS");
}
for (let i = 0; i < PRINTER_METHODS.length; i++) {
  const method = methods[i];
  P[PRINTER_METHODS[i]] = (self, ...args) => ReflectApply(method, self, args);
}

const {
  ObjectGetOwnPropertyNames, ObjectGetOwnPropertySymbols, ObjectGetOwnPropertyDescriptor,
  ObjectGetPrototypeOf, ObjectSetPrototypeOf, ObjectHasOwn, ObjectIs, ObjectCreate,
  ArrayIsArray, String, StringPrototypeSlice, StringPrototypeIncludes,
  StringPrototypeCharCodeAt, StringPrototypeToWellFormed, FunctionPrototypeToString,
  DatePrototypeGetTime, DatePrototypeToISOString, MapPrototypeForEach, MapPrototypeGetSize,
  SetPrototypeForEach, SetPrototypeGetSize, ArrayBufferIsView, ArrayBufferPrototypeGetByteLength,
  TypedArrayPrototypeGetLength, TypedArrayPrototypeGetSymbolToStringTag, RegExp, MathMin, Number,
} = P;

// `/source/flags` of a regular expression, from the engine's accessors; throws a TypeError
// for an object that is not one.
const regExpSource = methods[PRINTER_METHODS.length];
function RegExpText(re) {
  let flags = "";
  for (let i = 0; i < REGEXP_FLAGS.length; i++) {
    const get = methods[PRINTER_METHODS.length + 1 + i];
    if (typeof get === "function" && ReflectApply(get, re, [])) flags += REGEXP_FLAGS[i];
  }
  return "/" + ReflectApply(regExpSource, re, []) + "/" + flags;
}

const MAX_DEPTH = 2;
const MAX_ARRAY_ITEMS = 100;
const MAX_STRING = 10000;
// Past this length, an array's or a String object's own properties besides its items are
// not shown: finding them means listing every index (a million items would take tens of
// megabytes of the sandbox's memory).
const MAX_KEYS_LISTED = 10000;
const LINE_WIDTH = 72;
// As Node writes them: `\b \t \n \f \r` and the backslash by name, every other control
// character and DEL as `\xHH`.
const ESCAPES = {
  __proto__: null, "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f",
  "\x7f": "\\x7F",
};
{
  const CONTROLS = "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f" +
    "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f";
  const UPPER = "0123456789ABCDEF";
  for (let i = 0; i < CONTROLS.length; i++) {
    const c = CONTROLS[i];
    if (ESCAPES[c] === undefined) ESCAPES[c] = "\\x" + UPPER[i >> 4] + UPPER[i & 15];
  }
}

// `text` with its control characters and backslashes escaped (and `'` when it is the
// quote). Strings are scanned by hand here, not with a RegExp: String.prototype.replace
// stores its matches in an ordinary array, where a setter on Array.prototype sees them.
function escape(text, single) {
  let out = "";
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    let e = ESCAPES[c];
    if (e === undefined && single && c === "'") e = "\\'";
    if (e !== undefined) {
      out += StringPrototypeSlice(text, from, i) + e;
      from = i + 1;
    }
  }
  return from === 0 ? text : out + StringPrototypeSlice(text, from);
}

// `text` with `pad` after each line break.
function indentLines(text, pad) {
  let out = "";
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "\n") {
      out += StringPrototypeSlice(text, from, i + 1) + pad;
      from = i + 1;
    }
  }
  return from === 0 ? text : out + StringPrototypeSlice(text, from);
}

// Whether `key` is written without quotes (`[A-Za-z_$][A-Za-z0-9_$]*`).
function isIdentifier(key) {
  if (key.length === 0) return false;
  for (let i = 0; i < key.length; i++) {
    const c = key[i];
    const letter = (c >= "A" && c <= "Z") || (c >= "a" && c <= "z") || c === "_" || c === "$";
    if (!letter && !(i > 0 && c >= "0" && c <= "9")) return false;
  }
  return true;
}

// A list of the formatter's own: an array without a prototype, so that `add` and `joined`
// reach nothing a program defined (an index setter on `Array.prototype`, say).
function list() {
  return ObjectSetPrototypeOf([], null);
}

// Puts `item` at the end of `items`, a list.
function add(items, item) {
  items[items.length] = item;
}

// The strings of `items`, a list, with `separator` between each two.
function joined(items, separator) {
  if (items.length === 0) return "";
  let out = items[0];
  for (let i = 1; i < items.length; i++) out += separator + items[i];
  return out;
}

const HEX = "0123456789abcdef";

// `code` (below 0x10000) as four lower-case hex digits.
function hex4(code) {
  return HEX[(code >> 12) & 15] + HEX[(code >> 8) & 15] + HEX[(code >> 4) & 15] + HEX[code & 15];
}

// `object[key]` when it is an own member (of a property descriptor), else undefined.
function own(object, key) {
  return ObjectHasOwn(object, key) ? object[key] : undefined;
}

// The value of `object`'s own data property `key`; undefined for an accessor or none.
function ownValue(object, key) {
  let desc;
  try { desc = ObjectGetOwnPropertyDescriptor(object, key); } catch { return undefined; }
  return desc === undefined ? undefined : own(desc, "value");
}

// How an accessor property is shown.
function accessorLabel(desc) {
  const get = own(desc, "get");
  const set = own(desc, "set");
  return get && set ? "[Getter/Setter]" : get ? "[Getter]" : "[Setter]";
}

const isProxy = (value) => engine.proxyTarget(value) !== undefined;
const kindOf = engine.kindOf;
const TO_STRING_TAG = P.Symbol.toStringTag;

// "String", "Number" or "Boolean" for such an object (`new String("s")`), else "": the
// engine's own tag (`Object.prototype.toString`), read only when no `Symbol.toStringTag`
// property is on the prototype chain (the tag would be read through it) and no proxy is.
function boxedKind(value) {
  let obj = value;
  for (let depth = 0; obj !== null && depth < 1000; depth++) {
    if (isProxy(obj)) return "";
    let desc;
    try { desc = ObjectGetOwnPropertyDescriptor(obj, TO_STRING_TAG); } catch { return ""; }
    if (desc !== undefined) return "";
    try { obj = ObjectGetPrototypeOf(obj); } catch { return ""; }
  }
  if (obj !== null) return "";
  const tag = P.ObjectPrototypeToString(value);
  return tag === "[object String]" ? "String" : tag === "[object Number]" ? "Number"
    : tag === "[object Boolean]" ? "Boolean" : "";
}
const RangeErrorPrototype = P.RangeError.prototype;

// Whether `key` is an array index (a canonical integer below 2^32 - 1).
function isIndex(key) {
  return typeof key === "string" && key !== "4294967295" && String(Number(key) >>> 0) === key;
}

// What a read of `object[key]` would find, when no program code runs to find it: a data
// property on the prototype chain (undefined when there is none). An accessor, or a proxy
// on the way, gives `fallback`.
function dataLookup(object, key, fallback) {
  let obj = object;
  for (let depth = 0; obj !== null && depth < 1000; depth++) {
    if (isProxy(obj)) return fallback;
    let desc;
    try { desc = ObjectGetOwnPropertyDescriptor(obj, key); } catch { return fallback; }
    if (desc !== undefined) {
      return ObjectHasOwn(desc, "value") ? desc.value : fallback;
    }
    try { obj = ObjectGetPrototypeOf(obj); } catch { return fallback; }
  }
  return undefined;
}

// Whether `proto` is on `value`'s prototype chain, found without running program code (a
// proxy on the way ends the search).
function inherits(value, proto) {
  let obj = value;
  for (let depth = 0; depth < 1000; depth++) {
    if (isProxy(obj)) return false;
    try { obj = ObjectGetPrototypeOf(obj); } catch { return false; }
    if (obj === null) return false;
    if (obj === proto) return true;
  }
  return false;
}

// `/source/flags` of a regular expression, with line terminators escaped (as V8 shows
// them), so that it stays on one line; undefined for anything that is not one.
function regExpLabel(value) {
  if (kindOf(value) !== "RegExp") return undefined;
  let text;
  try { text = RegExpText(value); } catch { return undefined; }
  let out = "";
  let from = 0;
  let escaped = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    const e = c === "\n" ? "n" : c === "\r" ? "r" : c === "\u2028" ? "u2028" : c === "\u2029" ? "u2029" : undefined;
    if (e !== undefined) {
      out += StringPrototypeSlice(text, from, i) + (escaped ? e : "\\" + e);
      from = i + 1;
      escaped = false;
    } else {
      escaped = c === "\\" && !escaped;
    }
  }
  return from === 0 ? text : out + StringPrototypeSlice(text, from);
}

function quote(s) {
  let text = s;
  let extra = "";
  if (text.length > MAX_STRING) {
    extra = "... " + (text.length - MAX_STRING) + " more characters";
    text = StringPrototypeSlice(text, 0, MAX_STRING);
  }
  let q = "'";
  if (StringPrototypeIncludes(text, "'")) {
    q = StringPrototypeIncludes(text, '"') ? "`" : '"';
  }
  return q + escape(text, q === "'") + q + extra;
}

function formatKey(key) {
  if (typeof key === "symbol") return "[" + escape(String(key), true) + "]";
  return isIdentifier(key) ? key : quote(key);
}

function functionLabel(fn) {
  let source = "";
  try { source = ReflectApply(FunctionPrototypeToString, fn, []); } catch { /* native or revoked */ }
  let name = ownValue(fn, "name");
  if (typeof name !== "string") name = "";
  const starts = (prefix) => StringPrototypeSlice(source, 0, prefix.length) === prefix;
  if (engine.isClassSource(source)) return "[class " + (name || "(anonymous)") + "]";
  // `async` as a keyword, not the start of a name (`asyncData => …`).
  // Indexed only within the text (past its end a read would reach String.prototype).
  const next = source.length > 5 ? source[5] : undefined;
  const keyword = starts("async") && next !== undefined && !isIdentifier("a" + next);
  let kind = "Function";
  if (keyword && (starts("async function*") || starts("async *"))) kind = "AsyncGeneratorFunction";
  else if (keyword) kind = "AsyncFunction";
  else if (starts("function*") || starts("*")) kind = "GeneratorFunction";
  return name ? "[" + kind + ": " + name + "]" : "[" + kind + " (anonymous)]";
}

// `err.stack` as a read would find it, without running program code: a data property on
// the prototype chain, or the engine's own accessor; a program's getter is not called.
function errorStack(err) {
  let obj = err;
  for (let depth = 0; obj !== null && depth < 1000; depth++) {
    if (isProxy(obj)) return undefined;
    let desc;
    try { desc = ObjectGetOwnPropertyDescriptor(obj, "stack"); } catch { return undefined; }
    if (desc !== undefined) {
      if (ObjectHasOwn(desc, "value")) return desc.value;
      const get = own(desc, "get");
      if (get === undefined || get !== P.ErrorStackGetter) return undefined;
      try { return ReflectApply(get, err, []); } catch { return undefined; }
    }
    try { obj = ObjectGetPrototypeOf(obj); } catch { return undefined; }
  }
  return undefined;
}

// What `Error.prototype.toString` would give (ECMAScript §20.5.3.4), from data properties
// only: a getter for `name` or `message` is not run (its default is used instead).
function errorHead(err) {
  const text = (v, absent) => {
    if (v === undefined) return absent;
    const t = typeof v;
    if (t === "string") return v;
    if (t === "number" || t === "boolean" || t === "bigint") return String(v);
    return absent;
  };
  const name = text(dataLookup(err, "name", undefined), "Error");
  const message = text(dataLookup(err, "message", undefined), "");
  if (name === "") return message;
  if (message === "") return name;
  return name + ": " + message;
}

function formatError(err) {
  const head = errorHead(err);
  let stack = "";
  const s = errorStack(err);
  if (typeof s === "string" && s.length > 0) stack = s;
  if (stack === "") return "[" + head + "]";
  const last = stack.length - 1;
  return head + "\n" + (stack[last] === "\n" ? StringPrototypeSlice(stack, 0, last) : stack);
}

function constructorName(value) {
  let proto;
  try { proto = ObjectGetPrototypeOf(value); } catch { return ""; }
  if (proto === null) return null;
  if (isProxy(proto)) return "";
  try {
    let ctor = ownValue(proto, "constructor");
    // A proxy (such as the run's `Date`) is named as its target.
    const target = engine.proxyTarget(ctor);
    if (target !== undefined) ctor = target;
    const name = typeof ctor === "function" ? ownValue(ctor, "name") : undefined;
    if (typeof name === "string") return name;
  } catch { /* proxy trap threw */ }
  return "";
}

function join(prefix, items, open, close) {
  if (items.length === 0) return prefix + open + close;
  let total = prefix.length + open.length + close.length;
  let multiline = false;
  for (let i = 0; i < items.length; i++) {
    total += items[i].length + 2;
    if (StringPrototypeIncludes(items[i], "\n")) multiline = true;
  }
  if (!multiline && total <= LINE_WIDTH) {
    return prefix + open + " " + joined(items, ", ") + " " + close;
  }
  // Relative to where the block starts: a block nested in another is indented once more
  // by the outer one (its lines after the first, here).
  const pad = "  ";
  const lines = list();
  for (let i = 0; i < items.length; i++) {
    add(lines, pad + indentLines(items[i], pad));
  }
  return prefix + open + "\n" + joined(lines, ",\n") + "\n" + close;
}

function formatProperties(value, keys, depth, seen, out) {
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    let desc;
    try { desc = ObjectGetOwnPropertyDescriptor(value, key); } catch (e) { desc = undefined; }
    if (desc === undefined || own(desc, "enumerable") !== true) continue;
    let shown;
    if (!ObjectHasOwn(desc, "value")) {
      shown = accessorLabel(desc);
    } else {
      shown = formatValue(desc.value, depth + 1, seen);
    }
    add(out, formatKey(key) + ": " + shown);
  }
}

function ownKeys(value) {
  const names = ObjectGetOwnPropertyNames(value);
  const symbols = ObjectGetOwnPropertySymbols(value);
  const keys = list();
  for (let i = 0; i < names.length; i++) add(keys, names[i]);
  for (let i = 0; i < symbols.length; i++) add(keys, symbols[i]);
  return keys;
}

function formatObject(value, depth, seen) {
  if (typeof value === "function") {
    return functionLabel(value);
  }
  const kind = kindOf(value);
  if (kind === "Error") {
    return formatError(value);
  }
  if (kind === "Date") {
    const t = DatePrototypeGetTime(value);
    return t === t ? DatePrototypeToISOString(value) : "Invalid Date";
  }
  // An object that only inherits from RegExp.prototype has no source: shown as objects are.
  const regExp = regExpLabel(value);
  if (regExp !== undefined) return regExp;
  if (kind === "Promise") return "Promise { <unknown> }";
  if (kind === "WeakMap") return "WeakMap { <items unknown> }";
  if (kind === "WeakSet") return "WeakSet { <items unknown> }";

  for (let i = 0; i < seen.length; i++) {
    if (seen[i] === value) return "[Circular *1]";
  }
  const isArray = ArrayIsArray(value);
  const ctor = constructorName(value);
  if (depth > MAX_DEPTH) {
    if (isArray) return "[Array]";
    return ctor === null ? "[Object: null prototype]" : "[" + (ctor || "Object") + "]";
  }
  add(seen, value);
  try {
    const items = list();
    if (isArray) {
      const length = value.length;
      const shown = MathMin(length, MAX_ARRAY_ITEMS);
      let holes = 0;
      for (let i = 0; i < shown; i++) {
        const desc = ObjectGetOwnPropertyDescriptor(value, i);
        if (desc === undefined) {
          holes++;
          continue;
        }
        if (holes > 0) {
          add(items, "<" + holes + " empty item" + (holes > 1 ? "s" : "") + ">");
          holes = 0;
        }
        add(items, ObjectHasOwn(desc, "value")
          ? formatValue(desc.value, depth + 1, seen)
          : accessorLabel(desc));
      }
      if (holes > 0) add(items, "<" + holes + " empty item" + (holes > 1 ? "s" : "") + ">");
      if (length > shown) add(items, "... " + (length - shown) + " more item" + (length - shown > 1 ? "s" : ""));
      const keys = length <= MAX_KEYS_LISTED ? ownKeys(value) : list();
      const extra = list();
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i];
        if (k === "length" || isIndex(k)) continue;
        add(extra, k);
      }
      formatProperties(value, extra, depth, seen, items);
      const prefix = ctor && ctor !== "Array" ? ctor + "(" + length + ") " : "";
      return join(prefix, items, "[", "]");
    }
    if (kind === "Map") {
      const size = MapPrototypeGetSize(value);
      let count = 0;
      MapPrototypeForEach(value, (v, k) => {
        if (count++ < MAX_ARRAY_ITEMS) {
          add(items, formatValue(k, depth + 1, seen) + " => " + formatValue(v, depth + 1, seen));
        }
      });
      if (size > MAX_ARRAY_ITEMS) add(items, "... " + (size - MAX_ARRAY_ITEMS) + " more items");
      return join("Map(" + size + ") ", items, "{", "}");
    }
    if (kind === "Set") {
      const size = SetPrototypeGetSize(value);
      let count = 0;
      SetPrototypeForEach(value, (v) => {
        if (count++ < MAX_ARRAY_ITEMS) add(items, formatValue(v, depth + 1, seen));
      });
      if (size > MAX_ARRAY_ITEMS) add(items, "... " + (size - MAX_ARRAY_ITEMS) + " more items");
      return join("Set(" + size + ") ", items, "{", "}");
    }
    if (ArrayBufferIsView(value)) {
      let tag = "DataView";
      let length = 0;
      try {
        tag = TypedArrayPrototypeGetSymbolToStringTag(value) || "DataView";
        if (tag !== "DataView") length = TypedArrayPrototypeGetLength(value);
      } catch { /* DataView */ }
      const shown = MathMin(length, MAX_ARRAY_ITEMS);
      for (let i = 0; i < shown; i++) add(items, formatValue(value[i], depth + 1, seen));
      if (length > shown) add(items, "... " + (length - shown) + " more items");
      return join(tag + "(" + length + ") ", items, "[", "]");
    }
    if (kind === "ArrayBuffer") {
      return "ArrayBuffer { byteLength: " + ArrayBufferPrototypeGetByteLength(value) + " }";
    }
    const boxed = boxedKind(value);
    let prefix = "";
    if (boxed !== "") {
      let inner = "";
      const valueOf = boxed === "String" ? P.StringPrototypeValueOf
        : boxed === "Number" ? P.NumberPrototypeValueOf : P.BooleanPrototypeValueOf;
      try { inner = formatValue(valueOf(value), depth + 1, seen); } catch { inner = "?"; }
      prefix = "[" + boxed + ": " + inner + "] ";
    } else if (ctor === null) {
      prefix = "[Object: null prototype] ";
    } else if (ctor !== "" && ctor !== "Object") {
      prefix = ctor + " ";
    }
    const long = boxed === "String" && !(ownValue(value, "length") <= MAX_KEYS_LISTED);
    let keys = long ? list() : ownKeys(value);
    if (boxed === "String") {
      // A String object's characters are its own index properties: shown in the prefix.
      const named = list();
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i];
        if (!isIndex(k)) add(named, k);
      }
      keys = named;
    }
    formatProperties(value, keys, depth, seen, items);
    if (boxed !== "" && items.length === 0) return StringPrototypeSlice(prefix, 0, -1);
    return join(prefix, items, "{", "}");
  } finally {
    seen.length -= 1;
  }
}

function formatValue(value, depth, seen) {
  switch (typeof value) {
    case "string": return quote(value);
    case "number": return ObjectIs(value, -0) ? "-0" : String(value);
    case "bigint": return String(value) + "n";
    case "boolean": return value ? "true" : "false";
    case "undefined": return "undefined";
    case "symbol": return String(value);
    default: {
      if (value === null) return "null";
      // A proxy is shown as its target (its traps are the program's code).
      let target = engine.proxyTarget(value);
      if (target === null) return "<Revoked Proxy>";
      if (target === undefined) target = value;
      try {
        return formatObject(target, depth, seen);
      } catch (e) {
        // Running out of stack ends the print, as it would end any other work.
        if (kindOf(e) === "Error" && inherits(e, RangeErrorPrototype)) throw e;
        return "[object (could not be inspected)]";
      }
    }
  }
}

function inspect(value) {
  return formatValue(value, 0, list());
}

// JSON text of `value` for `%j`, as JSON.stringify writes it (ECMAScript §25.5.2), by hand:
// the engine's JSON.stringify keeps its work in ordinary arrays, where a setter on
// Array.prototype sees it. `undefined` for a value JSON leaves out; throws `CIRCULAR` on a
// cycle, and a TypeError on a BigInt, as JSON.stringify does.
const CIRCULAR = ObjectCreate(null);

function jsonText(value, stack) {
  if (value !== null && typeof value === "object") {
    const toJSON = value.toJSON;
    if (typeof toJSON === "function") value = ReflectApply(toJSON, value, [""]);
  }
  switch (typeof value) {
    case "string": return jsonString(value);
    case "number": return value === value && value !== Infinity && value !== -Infinity ? String(value) : "null";
    case "boolean": return value ? "true" : "false";
    case "bigint": throw new P.TypeError("BigInt value can't be serialized in JSON");
    case "object": break;
    default: return undefined;
  }
  if (value === null) return "null";
  const boxed = boxedKind(value);
  if (boxed === "String") return jsonString(P.StringPrototypeValueOf(value));
  if (boxed === "Number") return jsonText(P.NumberPrototypeValueOf(value), stack);
  if (boxed === "Boolean") return P.BooleanPrototypeValueOf(value) ? "true" : "false";
  for (let i = 0; i < stack.length; i++) {
    if (stack[i] === value) throw CIRCULAR;
  }
  add(stack, value);
  const parts = list();
  if (ArrayIsArray(value)) {
    const length = value.length;
    for (let i = 0; i < length; i++) {
      const item = jsonText(value[i], stack);
      add(parts, item === undefined ? "null" : item);
    }
    stack.length -= 1;
    return "[" + joined(parts, ",") + "]";
  }
  const keys = ObjectGetOwnPropertyNames(value);
  for (let i = 0; i < keys.length; i++) {
    const desc = ObjectGetOwnPropertyDescriptor(value, keys[i]);
    if (desc === undefined || own(desc, "enumerable") !== true) continue;
    const item = jsonText(value[keys[i]], stack);
    if (item !== undefined) add(parts, jsonString(keys[i]) + ":" + item);
  }
  stack.length -= 1;
  return "{" + joined(parts, ",") + "}";
}

const JSON_ESCAPES = {
  __proto__: null, '"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
};

// A JSON string literal: quotes, backslashes and control characters escaped, lone
// surrogates as `\u` escapes of four hex digits (as the well-formed JSON.stringify writes them).
function jsonString(text) {
  let out = '"';
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    const code = StringPrototypeCharCodeAt(text, i);
    let e = JSON_ESCAPES[c];
    if (e === undefined && code < 0x20) e = "\\u" + hex4(code);
    if (e === undefined && code >= 0xd800 && code <= 0xdfff) {
      const next = i + 1 < text.length ? StringPrototypeCharCodeAt(text, i + 1) : 0;
      if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
      e = "\\u" + hex4(code);
    }
    if (e !== undefined) {
      out += StringPrototypeSlice(text, from, i) + e;
      from = i + 1;
    }
  }
  return out + StringPrototypeSlice(text, from) + '"';
}

const SPECIFIERS = { __proto__: null, s: true, d: true, i: true, f: true, j: true, o: true, O: true, c: true };

// One `%` substitution of `console.log`'s format string.
function substitute(spec, arg) {
  switch (spec) {
    case "s": return typeof arg === "string" ? arg : inspect(arg);
    case "d":
    case "i": {
      if (typeof arg === "bigint") return String(arg) + "n";
      if (typeof arg === "symbol") return "NaN";
      const n = Number(arg);
      return spec === "i" ? String(n < 0 ? -P.MathFloor(-n) : P.MathFloor(n)) : String(n);
    }
    case "f": return typeof arg === "symbol" ? "NaN" : String(Number(arg));
    // As Node's `%j`: a cycle is shown as `[Circular]`; any other failure (a BigInt, a
    // `toJSON` that throws) is thrown.
    case "j": {
      const parts = list();
      try {
        return jsonText(arg, parts);
      } catch (e) {
        if (e === CIRCULAR) return "[Circular]";
        throw e;
      }
    }
    case "c": return "";
    default: return inspect(arg);
  }
}

function formatArgs(args) {
  const parts = list();
  let start = 0;
  // `args` is the rest list of a console method: no index past its length is read (that
  // read would reach Array.prototype).
  const first = args.length > 0 ? args[0] : undefined;
  if (typeof first === "string" && args.length > 1 && StringPrototypeIncludes(first, "%")) {
    let next = 1;
    // Scanned by hand, not with a RegExp: String.prototype.replace stores its matches in
    // an ordinary array, where a setter on Array.prototype would see them.
    let text = "";
    let from = 0;
    for (let i = 0; i < first.length - 1; i++) {
      if (first[i] !== "%") continue;
      const spec = first[i + 1];
      let shown;
      if (spec === "%") {
        shown = "%";
      } else if (SPECIFIERS[spec] !== true) {
        continue;
      } else if (next >= args.length) {
        i++;
        continue;
      } else {
        shown = substitute(spec, args[next++]);
      }
      text += StringPrototypeSlice(first, from, i) + shown;
      from = i + 2;
      i++;
    }
    text += StringPrototypeSlice(first, from);
    add(parts, text);
    start = next;
  }
  for (let i = start; i < args.length; i++) {
    const arg = args[i];
    add(parts, typeof arg === "string" ? arg : inspect(arg));
  }
  return joined(parts, " ");
}

// Both return well-formed text (lone surrogates as U+FFFD): the host takes UTF-8.
return {
  formatArgs: (args) => StringPrototypeToWellFormed(formatArgs(args)),
  inspect: (value) => StringPrototypeToWellFormed(inspect(value)),
};
