#!/usr/bin/env node
// Self-check: starts peer.mjs as a child, runs every workload on every
// available runtime with small n (each request repeated: the first answer is
// shown apart, then the median of the others), checks the protocol's error
// answers and the clean exit on EOF, checks the host tools (read_file path
// refusal, sleep, noop) in every runtime directly, and finally times
// `node oneshot.mjs <runtime>` spawn-to-exit (median of 20 runs).
//   node selfcheck.mjs [--quick]   (--quick: smaller n, fewer repeats, 5 oneshot runs)
import { spawn, spawnSync } from "node:child_process";
import { createInterface } from "node:readline";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const root = mkdtempSync(join(tmpdir(), "peers-selfcheck-"));
let failures = 0;
const fail = (msg) => { failures++; console.log("FAIL " + msg); };

const child = spawn(process.execPath, [join(here, "peer.mjs")], { stdio: ["pipe", "pipe", "inherit"] });
const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
const exited = new Promise((r) => child.on("exit", (code) => r(code)));

async function nextLine() {
  const { value, done } = await lines.next();
  if (done) throw new Error("peer closed stdout");
  try { return JSON.parse(value); } catch { throw new Error("non-JSON line on peer stdout: " + value); }
}
async function ask(req) {
  child.stdin.write((typeof req === "string" ? req : JSON.stringify(req)) + "\n");
  return nextLine();
}

const ready = await nextLine();
if (ready.ready !== true) fail("first line is not ready");
console.log("ready line:", JSON.stringify(ready));

const quick = process.argv.includes("--quick");
const WORKLOADS = [
  // [workload, n, unit: what one "iteration" is]
  ["cold_start", 20, "create + run `return 1` + dispose"],
  ["seq_noop", 500, "await noop"],
  ["seq_read", 500, "await read_file"],
  ["all_sleep", 3, "program (1000 sleeps)"],
  ["big_in", 3, "program (build+send 1 MB)"],
  ["big_out", 3, "program (receive 1 MB)"],
];
// The library's big_in takes seconds per run; keep it at one run.
const nFor = (rt, w, n) => (rt.startsWith("quickjs-wasm-lib") && (w === "big_in" || w === "big_out") ? 1 : quick ? Math.max(1, Math.ceil(n / 5)) : n);

const median = (xs) => { const a = [...xs].sort((x, y) => x - y); const m = a.length >> 1; return a.length % 2 ? a[m] : (a[m - 1] + a[m]) / 2; };
const fmt = (x) => Math.round(x).toLocaleString("en-US");
const pad = (s, k) => String(s).padEnd(k);
console.log("\nns per iteration; 'first' = first request in this process, 'warm' = median of the repeats after it");
console.log(pad("runtime", 46) + pad("workload", 12) + pad("n", 6) + pad("reqs", 6) + pad("first", 16) + pad("warm (median)", 16) + "iteration");
for (const rt of ready.runtimes) {
  if (!rt.available) {
    console.log(pad(rt.name, 46) + "unavailable: " + rt.why);
    continue;
  }
  for (const [w, n0, unit] of WORKLOADS) {
    const n = nFor(rt.name, w, n0);
    const slow = rt.name.startsWith("quickjs-wasm-lib") && (w === "big_in" || w === "big_out" || w === "all_sleep");
    const reqs = slow ? 2 : quick ? 3 : 6;
    const req = { runtime: rt.name, workload: w, n, root };
    const per = [];
    for (let i = 0; i < reqs; i++) {
      const r = await ask(req);
      if (!r.ok || typeof r.ns !== "number" || !(r.ns > 0)) { fail(`${rt.name} ${w}: ${JSON.stringify(r)}`); break; }
      per.push(r.ns / n);
    }
    if (per.length === reqs) console.log(pad(rt.name, 46) + pad(w, 12) + pad(n, 6) + pad(reqs, 6) + pad(fmt(per[0]), 16) + pad(fmt(median(per.slice(1))), 16) + unit);
  }
}

// Protocol error answers.
const bad = [
  [{ runtime: "nope", workload: "seq_noop", n: 1, root }, "unknown runtime"],
  [{ runtime: "node:vm", workload: "nope", n: 1, root }, "unknown workload"],
  [{ runtime: "node:vm", workload: "seq_noop", n: -1, root }, "bad n"],
  ["this is not json", "bad JSON"],
];
for (const [req, what] of bad) {
  const r = await ask(req);
  if (r.ok !== false || typeof r.error !== "string") fail(`${what}: expected ok:false, got ${JSON.stringify(r)}`);
  else console.log(`error answer ok (${what}): ${r.error}`);
}
// Short alias for the library runtime.
{
  const r = await ask({ runtime: "quickjs-wasm-lib", workload: "cold_start", n: 1, root });
  const libAvailable = ready.runtimes.some((x) => x.name.startsWith("quickjs-wasm-lib") && x.available);
  if (libAvailable && !r.ok) fail("alias quickjs-wasm-lib: " + JSON.stringify(r));
}
child.stdin.end();
const code = await exited;
if (code !== 0) fail(`peer exit code on EOF: ${code}`);
else console.log("peer exited 0 on EOF");

// read_file refuses paths that escape the root, in every runtime.
const { hostTools } = await import("./common.mjs");
for (const [short, path] of [["node:vm", "node-vm"], ["isolated-vm", "isolated-vm"], ["quickjs-wasm", "quickjs-wasm"], ["quickjs-wasm-lib", "quickjs-wasm-lib"]]) {
  let adapter;
  try { adapter = await (await import(`./runtimes/${path}.mjs`)).load(); } catch (e) { console.log(`${short}: unavailable (${e.message.split("\n")[0]})`); continue; }
  const h = await adapter.create(root);
  try {
    const got = await adapter.run(h, `
      const out = [];
      for (const p of ["../etc/passwd", "/etc/passwd", "a/../../x", "tiny.txt"]) {
        try { const r = await tools.read_file({path: p}); out.push("read:" + r.content.length); }
        catch (e) { out.push("refused"); }
      }
      const t0 = Date.now(); await tools.sleep({ms: 20}); out.push(Date.now() - t0 >= 19 ? "slept" : "no-sleep");
      const n = await tools.noop({}); out.push(n === null || (typeof n === "object" && n !== null && Object.keys(n).length === 0) ? "noop" : "noop?" + JSON.stringify(n));
      return out.join(",");`);
    const want = "refused,refused,refused,read:6,slept,noop";
    if (got !== want) fail(`${short} tool checks: ${got}`); else console.log(`${short}: tool checks ok (${got})`);
  } finally {
    await adapter.dispose(h);
  }
}

// Whole-process spawn-to-exit of oneshot.mjs (program `return 1`), plus a bare `node -e 0` baseline.
{
  const runs = quick ? 5 : 20;
  const cases = [["(baseline) node -e 0", ["-e", "0"], ""]];
  for (const rt of ready.runtimes) if (rt.available) cases.push([rt.name, [join(here, "oneshot.mjs"), rt.name, root], "1\n"]);
  // NODE_EXTRA_CA_CERTS makes every node process read a CA bundle at start
  // (~90 ms here); none of these runs needs it, so it is left out.
  const env = { ...process.env };
  delete env.NODE_EXTRA_CA_CERTS;
  console.log(`\noneshot spawn-to-exit, ${runs} runs after 2 warm-up runs, without NODE_EXTRA_CA_CERTS (ms): median [min .. max]`);
  for (const [label, args, want] of cases) {
    const ms = [];
    for (let i = 0; i < runs + 2; i++) {
      const t0 = process.hrtime.bigint();
      const r = spawnSync(process.execPath, args, { encoding: "utf8", env });
      const dt = Number(process.hrtime.bigint() - t0) / 1e6;
      if (r.status !== 0 || r.stdout !== want) { fail(`oneshot ${label}: status ${r.status}, stdout ${JSON.stringify(r.stdout)}, stderr ${r.stderr}`); break; }
      if (i >= 2) ms.push(dt);
    }
    if (ms.length === runs) console.log(`${pad(label, 46)}${pad(median(ms).toFixed(1), 8)} [${Math.min(...ms).toFixed(1)} .. ${Math.max(...ms).toFixed(1)}]`);
  }
}

rmSync(root, { recursive: true, force: true });
console.log(failures === 0 ? "\nselfcheck: all ok" : `\nselfcheck: ${failures} failure(s)`);
process.exit(failures === 0 ? 0 : 1);
