// Shared host side of the peer runtimes: the five host tools, the ~1 MB data
// set and the program wrapper. Imports only node:fs and node:path so that
// oneshot.mjs stays a fair process-start comparison.
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { join, isAbsolute } from "node:path";

// 14000 items -> JSON.stringify(...) is 1,020,971 bytes (1.02 MB, 0.97 MiB).
export const BIG_COUNT = 14000;

// The big value: {items: [...]}, item i = {id: i, name: "item-" + i, tags: ["a", "b"], score: i / 7}.
export function makeBigData(count = BIG_COUNT) {
  const items = [];
  for (let i = 0; i < count; i++) items.push({ id: i, name: "item-" + i, tags: ["a", "b"], score: i / 7 });
  return { items };
}

// Built once per process, at setup: peer.mjs calls primeBigData() before it
// reports ready; oneshot.mjs never calls big_out, so it never builds it.
let bigData = null;
export function primeBigData() {
  if (bigData === null) bigData = makeBigData();
  return bigData;
}

// The guest-side loop that builds the same data, for the big_in program.
export const GUEST_BUILD_BIG =
  `const items = []; for (let i = 0; i < ${BIG_COUNT}; i++) items.push({id: i, name: "item-" + i, tags: ["a", "b"], score: i / 7}); const data = {items};`;

function checkRelative(p) {
  if (typeof p !== "string" || p.length === 0) throw new Error("read_file: path must be a non-empty string");
  if (isAbsolute(p) || p.startsWith("/") || p.startsWith("\\")) throw new Error("read_file: absolute path refused: " + p);
  if (p.split(/[\\/]/).includes("..")) throw new Error("read_file: path escapes root: " + p);
}

// The host tools, as plain async host functions (each returns a host Promise).
// Each runtime adapter bridges these into its guest as `tools.<name>(args)`.
export function hostTools(root) {
  return {
    async noop(_args) {
      return null;
    },
    sleep(args) {
      const ms = Number(args && args.ms) || 0;
      return new Promise((resolve) => setTimeout(() => resolve(null), ms));
    },
    async read_file(args) {
      const p = args && args.path;
      checkRelative(p);
      // A real read on every call, no caching.
      return { content: readFileSync(join(root, p), "utf8") };
    },
    async big_in(value) {
      // `value` is already a host-side value here (each adapter converted or
      // copied it across the boundary, except node:vm, which shares the heap).
      return value.items.length;
    },
    async big_out(_args) {
      return primeBigData();
    },
  };
}

export const TOOL_NAMES = ["noop", "sleep", "read_file", "big_in", "big_out"];

// An async function body, as a script expression that yields the promise.
export function wrapBody(body) {
  return `(async () => {\n${body}\n})()`;
}

export function ensureTiny(root) {
  const p = join(root, "tiny.txt");
  if (!existsSync(p)) writeFileSync(p, "hello\n");
}
