// The formatter behind `console.*`, like Node's `util.inspect` (depth 2, at most 100 array
// items, cycles as `[Circular *1]`, getters shown, not run). Loaded on the first console
// call (or the first value the host must show), not with every run: most of its cost is
// compiling, and programs that never log never pay it.
//
// Loaded as the body of `function (P) { … }`, P being the primordials; returns
// `{ formatArgs, inspect }`.
"use strict";

const {
  ObjectGetOwnPropertyNames, ObjectGetOwnPropertySymbols, ObjectGetOwnPropertyDescriptor,
  ObjectGetPrototypeOf, ObjectIs, ObjectPrototypeToString, ObjectCreate, ReflectApply,
  ArrayIsArray, ArrayPrototypePush, ArrayPrototypeJoin, String, StringPrototypeReplace,
  StringPrototypeSlice, StringPrototypeRepeat, StringPrototypeIncludes, SymbolPrototypeToString,
  FunctionPrototypeToString, ErrorPrototypeToString, RegExpPrototypeTest, RegExpPrototypeToString,
  DatePrototypeGetTime, DatePrototypeToISOString, MapPrototypeForEach, MapPrototypeGetSize,
  SetPrototypeForEach, SetPrototypeGetSize, ArrayBufferIsView, ArrayBufferPrototypeGetByteLength,
  TypedArrayPrototypeGetLength, TypedArrayPrototypeGetSymbolToStringTag, NumberPrototypeToString,
  BigIntPrototypeToString, JSONStringify, Map, Set, Date, RegExp, Error, ArrayBuffer, Promise,
  WeakMap, WeakSet, MathMin, Number,
} = P;

const MAX_DEPTH = 2;
const MAX_ARRAY_ITEMS = 100;
const MAX_STRING = 10000;
const LINE_WIDTH = 72;
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function isInstance(value, ctor) {
  try {
    return value instanceof ctor;
  } catch {
    return false;
  }
}

function quote(s) {
  let text = s;
  let extra = "";
  if (text.length > MAX_STRING) {
    extra = `... ${text.length - MAX_STRING} more characters`;
    text = StringPrototypeSlice(text, 0, MAX_STRING);
  }
  let q = "'";
  if (StringPrototypeIncludes(text, "'")) {
    q = StringPrototypeIncludes(text, '"') ? "`" : '"';
  }
  text = StringPrototypeReplace(text, /[\\\n\r\t\b\f\v\0]/g, (c) => {
    switch (c) {
      case "\\": return "\\\\";
      case "\n": return "\\n";
      case "\r": return "\\r";
      case "\t": return "\\t";
      case "\b": return "\\b";
      case "\f": return "\\f";
      case "\v": return "\\v";
      default: return "\\0";
    }
  });
  if (q === "'") text = StringPrototypeReplace(text, /'/g, "\\'");
  return q + text + q + extra;
}

function formatKey(key) {
  if (typeof key === "symbol") return "[" + SymbolPrototypeToString(key) + "]";
  return RegExpPrototypeTest(IDENTIFIER, key) ? key : quote(key);
}

function functionLabel(fn) {
  let source = "";
  try { source = FunctionPrototypeToString(fn); } catch { /* native or revoked */ }
  let name = "";
  try { name = fn.name; } catch { /* getter threw */ }
  if (typeof name !== "string") name = "";
  const starts = (prefix) => P.StringPrototypeStartsWith(source, prefix);
  if (starts("class")) return `[class ${name || "(anonymous)"}]`;
  let kind = "Function";
  if (starts("async function*") || starts("async *")) kind = "AsyncGeneratorFunction";
  else if (starts("async")) kind = "AsyncFunction";
  else if (starts("function*")) kind = "GeneratorFunction";
  return name ? `[${kind}: ${name}]` : `[${kind} (anonymous)]`;
}

function formatError(err) {
  let head;
  try {
    head = ErrorPrototypeToString(err);
  } catch {
    head = "Error";
  }
  let stack = "";
  try {
    const s = err.stack;
    if (typeof s === "string" && s.length > 0) stack = s;
  } catch { /* getter threw */ }
  if (stack === "") return `[${head}]`;
  return head + "\n" + StringPrototypeReplace(stack, /\n$/, "");
}

function constructorName(value) {
  let proto;
  try { proto = ObjectGetPrototypeOf(value); } catch { return ""; }
  if (proto === null) return null;
  try {
    const desc = ObjectGetOwnPropertyDescriptor(proto, "constructor");
    if (desc !== undefined && typeof desc.value === "function" && typeof desc.value.name === "string") {
      return desc.value.name;
    }
  } catch { /* proxy trap threw */ }
  return "";
}

function join(prefix, items, open, close, indent) {
  if (items.length === 0) return `${prefix}${open}${close}`;
  let total = prefix.length + open.length + close.length;
  let multiline = false;
  for (let i = 0; i < items.length; i++) {
    total += items[i].length + 2;
    if (StringPrototypeIncludes(items[i], "\n")) multiline = true;
  }
  if (!multiline && total <= LINE_WIDTH) {
    return `${prefix}${open} ${ArrayPrototypeJoin(items, ", ")} ${close}`;
  }
  const pad = StringPrototypeRepeat(" ", indent + 2);
  const lines = [];
  for (let i = 0; i < items.length; i++) {
    ArrayPrototypePush(lines, pad + StringPrototypeReplace(items[i], /\n/g, "\n" + pad));
  }
  return `${prefix}${open}\n${ArrayPrototypeJoin(lines, ",\n")}\n${StringPrototypeRepeat(" ", indent)}${close}`;
}

function formatProperties(value, keys, depth, seen, indent, out) {
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    let desc;
    try { desc = ObjectGetOwnPropertyDescriptor(value, key); } catch (e) { desc = undefined; }
    if (desc === undefined || (!desc.enumerable && typeof key !== "symbol")) continue;
    if (desc.enumerable === false) continue;
    let shown;
    if (desc.get !== undefined || desc.set !== undefined) {
      shown = desc.get && desc.set ? "[Getter/Setter]" : desc.get ? "[Getter]" : "[Setter]";
    } else {
      shown = formatValue(desc.value, depth + 1, seen, indent + 2);
    }
    ArrayPrototypePush(out, `${formatKey(key)}: ${shown}`);
  }
}

function ownKeys(value) {
  const names = ObjectGetOwnPropertyNames(value);
  const symbols = ObjectGetOwnPropertySymbols(value);
  for (let i = 0; i < symbols.length; i++) ArrayPrototypePush(names, symbols[i]);
  return names;
}

function formatObject(value, depth, seen, indent) {
  if (typeof value === "function") {
    return functionLabel(value);
  }
  if (isInstance(value, Error) || ObjectPrototypeToString(value) === "[object Error]") {
    return formatError(value);
  }
  if (isInstance(value, Date)) {
    const t = DatePrototypeGetTime(value);
    return t === t ? DatePrototypeToISOString(value) : "Invalid Date";
  }
  if (isInstance(value, RegExp)) return RegExpPrototypeToString(value);
  if (isInstance(value, Promise)) return "Promise { <unknown> }";
  if (isInstance(value, WeakMap)) return "WeakMap { <items unknown> }";
  if (isInstance(value, WeakSet)) return "WeakSet { <items unknown> }";

  for (let i = 0; i < seen.length; i++) {
    if (seen[i] === value) return "[Circular *1]";
  }
  const isArray = ArrayIsArray(value);
  const ctor = constructorName(value);
  if (depth > MAX_DEPTH) {
    if (isArray) return "[Array]";
    return ctor === null ? "[Object: null prototype]" : `[${ctor || "Object"}]`;
  }
  ArrayPrototypePush(seen, value);
  try {
    const items = [];
    if (isArray) {
      const length = value.length;
      const shown = MathMin(length, MAX_ARRAY_ITEMS);
      let holes = 0;
      for (let i = 0; i < shown; i++) {
        if (!P.ObjectPrototypeHasOwnProperty(value, i)) {
          holes++;
          continue;
        }
        if (holes > 0) {
          ArrayPrototypePush(items, `<${holes} empty item${holes > 1 ? "s" : ""}>`);
          holes = 0;
        }
        ArrayPrototypePush(items, formatValue(value[i], depth + 1, seen, indent + 2));
      }
      if (holes > 0) ArrayPrototypePush(items, `<${holes} empty item${holes > 1 ? "s" : ""}>`);
      if (length > shown) ArrayPrototypePush(items, `... ${length - shown} more item${length - shown > 1 ? "s" : ""}`);
      const keys = ownKeys(value);
      const extra = [];
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i];
        if (typeof k === "string" && (k === "length" || String(Number(k) >>> 0) === k)) continue;
        ArrayPrototypePush(extra, k);
      }
      formatProperties(value, extra, depth, seen, indent, items);
      const prefix = ctor && ctor !== "Array" ? `${ctor}(${length}) ` : "";
      return join(prefix, items, "[", "]", indent);
    }
    if (isInstance(value, Map)) {
      const size = MapPrototypeGetSize(value);
      let count = 0;
      MapPrototypeForEach(value, (v, k) => {
        if (count++ < MAX_ARRAY_ITEMS) {
          ArrayPrototypePush(items, `${formatValue(k, depth + 1, seen, indent + 2)} => ${formatValue(v, depth + 1, seen, indent + 2)}`);
        }
      });
      if (size > MAX_ARRAY_ITEMS) ArrayPrototypePush(items, `... ${size - MAX_ARRAY_ITEMS} more items`);
      return join(`Map(${size}) `, items, "{", "}", indent);
    }
    if (isInstance(value, Set)) {
      const size = SetPrototypeGetSize(value);
      let count = 0;
      SetPrototypeForEach(value, (v) => {
        if (count++ < MAX_ARRAY_ITEMS) ArrayPrototypePush(items, formatValue(v, depth + 1, seen, indent + 2));
      });
      if (size > MAX_ARRAY_ITEMS) ArrayPrototypePush(items, `... ${size - MAX_ARRAY_ITEMS} more items`);
      return join(`Set(${size}) `, items, "{", "}", indent);
    }
    if (ArrayBufferIsView(value)) {
      let tag = "DataView";
      let length = 0;
      try {
        tag = TypedArrayPrototypeGetSymbolToStringTag(value) || "DataView";
        length = TypedArrayPrototypeGetLength(value);
      } catch { /* DataView */ }
      const shown = MathMin(length, MAX_ARRAY_ITEMS);
      for (let i = 0; i < shown; i++) ArrayPrototypePush(items, formatValue(value[i], depth + 1, seen, indent + 2));
      if (length > shown) ArrayPrototypePush(items, `... ${length - shown} more items`);
      return join(`${tag}(${length}) `, items, "[", "]", indent);
    }
    if (isInstance(value, ArrayBuffer)) {
      return `ArrayBuffer { byteLength: ${ArrayBufferPrototypeGetByteLength(value)} }`;
    }
    const tag = ObjectPrototypeToString(value);
    let prefix = "";
    if (tag === "[object String]" || tag === "[object Number]" || tag === "[object Boolean]") {
      let inner = "";
      try { inner = formatValue(value.valueOf(), depth + 1, seen, indent); } catch { inner = "?"; }
      prefix = `[${StringPrototypeSlice(tag, 8, -1)}: ${inner}] `;
    } else if (ctor === null) {
      prefix = "[Object: null prototype] ";
    } else if (ctor !== "" && ctor !== "Object") {
      prefix = `${ctor} `;
    }
    formatProperties(value, ownKeys(value), depth, seen, indent, items);
    if (prefix !== "" && items.length === 0 && tag !== "[object Object]") return StringPrototypeSlice(prefix, 0, -1);
    return join(prefix, items, "{", "}", indent);
  } finally {
    seen.length -= 1;
  }
}

function formatValue(value, depth, seen, indent) {
  switch (typeof value) {
    case "string": return quote(value);
    case "number": return ObjectIs(value, -0) ? "-0" : NumberPrototypeToString(value);
    case "bigint": return BigIntPrototypeToString(value) + "n";
    case "boolean": return value ? "true" : "false";
    case "undefined": return "undefined";
    case "symbol": return SymbolPrototypeToString(value);
    default:
      if (value === null) return "null";
      try {
        return formatObject(value, depth, seen, indent);
      } catch (e) {
        if (isInstance(e, P.RangeError)) throw e;
        return "[object (could not be inspected)]";
      }
  }
}

function inspect(value) {
  return formatValue(value, 0, [], 0);
}

function formatArgs(args) {
  const parts = [];
  let start = 0;
  const first = args[0];
  if (typeof first === "string" && args.length > 1 && StringPrototypeIncludes(first, "%")) {
    let next = 1;
    const text = StringPrototypeReplace(first, /%([sdifjoOc%])/g, (match, spec) => {
      if (spec === "%") return "%";
      if (next >= args.length) return match;
      const arg = args[next++];
      switch (spec) {
        case "s": return typeof arg === "string" ? arg : inspect(arg);
        case "d":
        case "i": {
          if (typeof arg === "bigint") return BigIntPrototypeToString(arg) + "n";
          const n = Number(arg);
          return spec === "i" ? String(n < 0 ? -P.MathFloor(-n) : P.MathFloor(n)) : String(n);
        }
        case "f": return String(Number(arg));
        case "j": try { return JSONStringify(arg); } catch { return "[Circular]"; }
        case "c": return "";
        default: return inspect(arg);
      }
    });
    ArrayPrototypePush(parts, text);
    start = next;
  }
  for (let i = start; i < args.length; i++) {
    const arg = args[i];
    ArrayPrototypePush(parts, typeof arg === "string" ? arg : inspect(arg));
  }
  return ArrayPrototypeJoin(parts, " ");
}

return { formatArgs, inspect };
