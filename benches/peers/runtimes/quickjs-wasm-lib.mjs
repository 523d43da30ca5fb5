// quickjs-wasm-lib — @sebastianwessel/quickjs, a sandbox library on top of
// quickjs-emscripten-core, run on the same Bellard QuickJS RELEASE_SYNC wasm
// variant as quickjs-wasm (the library's docs default to the quickjs-ng
// variant; the Bellard one is chosen so the engine matches rquickjs).
//
// Used the library's own way: loadQuickJs(variant) once per process, then one
// runSandboxed(...) per "context" with the host tools passed in
// `env: { tools }`; the library exposes them to the guest (values cross with
// its own getHandle / handleToNative converters, host promises become guest
// promises) and the guest calls them through unbound wrappers over
// `env.tools`. Each program runs through the library's evalCode as an ES
// module whose default export is the result.
import variant from "@jitl/quickjs-wasmfile-release-sync";
import { loadQuickJs } from "@sebastianwessel/quickjs";
import { hostTools } from "../common.mjs";

export const name = "quickjs-wasm-lib (@sebastianwessel/quickjs)";
export const shortName = "quickjs-wasm-lib";

const toStderr = (...a) => process.stderr.write(a.map(String).join(" ") + "\n");
const quietConsole = { log: toStderr, error: toStderr, warn: toStderr, info: toStderr, debug: toStderr, trace: toStderr };

export async function load() {
  const { runSandboxed } = await loadQuickJs(variant);
  let seq = 0;
  return {
    // runSandboxed owns the context's lifetime through a callback; keep the
    // callback open until dispose() so several programs can run in it.
    create(root) {
      let finish;
      const done = new Promise((r) => { finish = r; });
      let resolveReady, rejectReady;
      const ready = new Promise((res, rej) => { resolveReady = res; rejectReady = rej; });
      const whole = runSandboxed(async ({ evalCode }) => {
        resolveReady(evalCode);
        await done;
      }, {
        env: { tools: hostTools(root) },
        console: quietConsole,
        executionTimeout: 0,
      });
      whole.catch(rejectReady);
      return ready.then((evalCode) => ({ evalCode, finish, whole }));
    },
    async run(h, body) {
      // Unbound guest wrappers: the library converts the call's `this` to a host
      // value on every host call, and `tools.noop()` would make it convert the
      // whole tools object (with its five functions) each time — ~4x slower.
      const code = `const tools = Object.fromEntries(Object.entries(env.tools).map(([k, f]) => [k, (a) => f(a)]));\nexport default await (async () => {\n${body}\n})();\n`;
      const res = await h.evalCode(code, `/src/program-${++seq}.js`);
      if (!res.ok) {
        const e = res.error;
        throw new Error("guest error: " + (e && e.message ? `${e.name || "Error"}: ${e.message}` : JSON.stringify(e)));
      }
      return res.data;
    },
    async dispose(h) {
      h.finish();
      await h.whole;
    },
  };
}
