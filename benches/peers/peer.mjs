#!/usr/bin/env node
// Long-running benchmark worker: JSON lines on stdin -> one JSON line per
// request on stdout. Only protocol lines go to stdout; diagnostics go to stderr.
//
//   start:    {"ready":true,"runtimes":[{"name":..,"available":..,"why"?:..}],"versions":{..}}
//   request:  {"runtime":"node:vm","workload":"seq_noop","n":1000,"root":"/abs/dir"}
//   answer:   {"ok":true,"ns":<total timed wall nanoseconds>} | {"ok":false,"error":"..."}
//
// Requests are handled one at a time, in order; EOF on stdin -> exit 0.
import { createInterface } from "node:readline";
import { readFileSync } from "node:fs";
import { format } from "node:util";
import { BIG_COUNT, GUEST_BUILD_BIG, ensureTiny, primeBigData } from "./common.mjs";

// Keep stdout for the protocol: route any console output to stderr.
const toStderr = (...a) => process.stderr.write(format(...a) + "\n");
console.log = console.info = console.debug = console.warn = console.error = console.trace = toStderr;

const send = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");

function pkgVersion(name) {
  try {
    const url = new URL(`./node_modules/${name}/package.json`, import.meta.url);
    return JSON.parse(readFileSync(url, "utf8")).version;
  } catch {
    return null;
  }
}

const MODULES = [
  ["node:vm", "./runtimes/node-vm.mjs"],
  ["isolated-vm", "./runtimes/isolated-vm.mjs"],
  ["quickjs-wasm", "./runtimes/quickjs-wasm.mjs"],
  ["quickjs-wasm-lib", "./runtimes/quickjs-wasm-lib.mjs"],
];

const adapters = new Map(); // request name -> adapter
const runtimes = [];
for (const [short, path] of MODULES) {
  let mod = null;
  try {
    mod = await import(path);
    const adapter = await mod.load();
    adapters.set(mod.name, adapter);
    adapters.set(short, adapter);
    runtimes.push({ name: mod.name, available: true });
  } catch (e) {
    const fullName = mod && mod.name ? mod.name : short === "quickjs-wasm-lib" ? "quickjs-wasm-lib (@sebastianwessel/quickjs)" : short;
    const why = (e && e.message ? e.message : String(e)).split("\n")[0];
    toStderr(`peer: runtime ${fullName} unavailable: ${e && e.stack ? e.stack : e}`);
    runtimes.push({ name: fullName, available: false, why });
  }
}

const versions = { node: process.versions.node, v8: process.versions.v8 };
for (const p of ["quickjs-emscripten", "quickjs-emscripten-core", "@jitl/quickjs-wasmfile-release-sync", "@sebastianwessel/quickjs", "isolated-vm"]) {
  const v = pkgVersion(p);
  if (v) versions[p] = v;
}
versions["quickjs (engine in the wasm variant)"] = "2025-09-13 (bellard/quickjs f1139494)";
versions.big_items = BIG_COUNT;

// The 1 MB host value is built once, at setup, before ready.
primeBigData();

// ---- workloads -------------------------------------------------------------

const now = () => process.hrtime.bigint();

function expectEq(got, want, what) {
  if (got !== want) throw new Error(`${what}: wrong result ${JSON.stringify(got)}, expected ${want}`);
}

// Non-cold workloads: build a context (untimed), time `reps` program runs, dispose (untimed).
async function timedInContext(adapter, root, reps, body, want, what) {
  const h = await adapter.create(root);
  try {
    const t0 = now();
    for (let r = 0; r < reps; r++) {
      const got = await adapter.run(h, body);
      expectEq(got, want, what);
    }
    return now() - t0;
  } finally {
    await adapter.dispose(h);
  }
}

async function runWorkload(adapter, workload, n, root) {
  switch (workload) {
    case "cold_start": {
      const t0 = now();
      for (let i = 0; i < n; i++) {
        const h = await adapter.create(root);
        let got;
        try {
          got = await adapter.run(h, "return 1");
        } finally {
          await adapter.dispose(h);
        }
        expectEq(got, 1, "cold_start");
      }
      return now() - t0;
    }
    case "seq_noop":
      return timedInContext(adapter, root, 1,
        `const N = ${n}; for (let i = 0; i < N; i++) await tools.noop({}); return N`, n, "seq_noop");
    case "seq_read":
      ensureTiny(root);
      return timedInContext(adapter, root, 1,
        `const N = ${n}; for (let i = 0; i < N; i++) { const r = await tools.read_file({path: "tiny.txt"}); if (r.content.length !== 6) throw new Error("bad") } return N`,
        n, "seq_read");
    case "all_sleep":
      return timedInContext(adapter, root, n,
        `await Promise.all(Array.from({length: 1000}, () => tools.sleep({ms: 1}))); return 1000`, 1000, "all_sleep");
    case "big_in":
      return timedInContext(adapter, root, n,
        `${GUEST_BUILD_BIG}\nreturn await tools.big_in(data);`, BIG_COUNT, "big_in");
    case "big_out":
      return timedInContext(adapter, root, n,
        `const v = await tools.big_out({}); return v.items.length + v.items[5].tags.length`, BIG_COUNT + 2, "big_out");
    default:
      throw new Error(`unknown workload ${JSON.stringify(workload)}`);
  }
}

async function handle(line) {
  let req;
  try {
    req = JSON.parse(line);
  } catch (e) {
    return { ok: false, error: "bad request JSON: " + e.message };
  }
  try {
    if (!req || typeof req !== "object") throw new Error("request must be an object");
    const adapter = adapters.get(req.runtime);
    if (!adapter) {
      const known = runtimes.find((r) => r.name === req.runtime || r.name.startsWith(req.runtime + " "));
      throw new Error(known ? `runtime ${req.runtime} unavailable: ${known.why}` : `unknown runtime ${JSON.stringify(req.runtime)}`);
    }
    const n = req.n;
    if (!Number.isInteger(n) || n < 0) throw new Error("n must be a non-negative integer");
    if (typeof req.root !== "string" || !req.root.startsWith("/")) throw new Error("root must be an absolute path");
    const ns = await runWorkload(adapter, req.workload, n, req.root);
    return { ok: true, ns: Number(ns) };
  } catch (e) {
    const msg = e && e.message ? e.message : String(e);
    toStderr(`peer: request ${line} failed: ${e && e.stack ? e.stack : e}`);
    return { ok: false, error: msg };
  }
}

// A guest-side rejection that nobody awaits must not kill the worker.
process.on("unhandledRejection", (e) => toStderr("peer: unhandled rejection:", e));

send({ ready: true, runtimes, versions });

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
for await (const line of rl) {
  if (line.trim() === "") continue;
  send(await handle(line));
}
process.exit(0);
