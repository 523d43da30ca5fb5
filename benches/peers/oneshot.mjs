#!/usr/bin/env node
// Whole-process run for spawn-to-exit timing:
//   node oneshot.mjs <runtime> [root]
// Sets up one runtime with the five host tools installed, runs the program
// `return 1` (an async function body), prints its result (1) and exits 0.
// Imports only the chosen runtime's module (plus the small shared common.mjs).
const MODULES = {
  "node:vm": "./runtimes/node-vm.mjs",
  "isolated-vm": "./runtimes/isolated-vm.mjs",
  "quickjs-wasm": "./runtimes/quickjs-wasm.mjs",
  "quickjs-wasm-lib": "./runtimes/quickjs-wasm-lib.mjs",
  "quickjs-wasm-lib (@sebastianwessel/quickjs)": "./runtimes/quickjs-wasm-lib.mjs",
};

const [runtime, root = process.cwd()] = process.argv.slice(2);
const path = MODULES[runtime];
if (!path) {
  process.stderr.write(`usage: node oneshot.mjs <${Object.keys(MODULES).slice(0, 4).join("|")}> [root]\n`);
  process.exit(2);
}
try {
  const adapter = await (await import(path)).load();
  const h = await adapter.create(root);
  const result = await adapter.run(h, "return 1");
  await adapter.dispose(h);
  if (result !== 1) throw new Error(`wrong result ${JSON.stringify(result)}`);
  process.stdout.write(String(result) + "\n");
  process.exit(0);
} catch (e) {
  process.stderr.write(`oneshot ${runtime}: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
}
