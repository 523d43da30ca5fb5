// isolated-vm — a separate V8 isolate (own heap) through a native addon.
// Each host tool is an ivm.Reference to the async host function; the guest
// calls it with ref.apply(..., {arguments: {copy: true}, result: {promise: true, copy: true}}),
// so the argument is structured-copied into the host and the resolved value is
// copied (ExternalCopy semantics) back into the isolate.
import { createRequire } from "node:module";
import { hostTools, TOOL_NAMES, wrapBody } from "../common.mjs";

export const name = "isolated-vm";

export async function load() {
  const require = createRequire(import.meta.url);
  let ivm;
  try {
    ivm = require("isolated-vm");
  } catch (e) {
    const first = String(e && e.message ? e.message : e).split("\n")[0];
    throw new Error(`isolated-vm could not be loaded (optional native addon; not installed or its node-gyp build failed/was skipped): ${first}`);
  }
  return {
    create(root) {
      const isolate = new ivm.Isolate({ memoryLimit: 256 });
      const context = isolate.createContextSync();
      const tools = hostTools(root);
      const global = context.global;
      for (const t of TOOL_NAMES) {
        const fn = tools[t];
        global.setSync("__host_" + t, new ivm.Reference((arg) => {
          let p;
          try { p = fn(arg); } catch (e) { p = Promise.reject(e); }
          // isolated-vm attaches its own handlers a tick later; mark the host
          // promise as handled so a rejection is not reported as unhandled.
          p.catch(() => {});
          return p;
        }));
      }
      context.evalSync(`{
        const mk = (ref) => (arg) => ref.apply(undefined, [arg], { arguments: { copy: true }, result: { promise: true, copy: true } });
        globalThis.tools = { ${TOOL_NAMES.map((t) => `${t}: mk(__host_${t})`).join(", ")} };
        ${TOOL_NAMES.map((t) => `delete globalThis.__host_${t};`).join(" ")}
      }`);
      return { isolate, context };
    },
    async run(h, body) {
      return await h.context.eval(wrapBody(body), { promise: true, copy: true });
    },
    dispose(h) {
      h.context.release();
      h.isolate.dispose();
    },
  };
}
