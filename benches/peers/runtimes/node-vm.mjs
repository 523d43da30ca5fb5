// node:vm — a new V8 context (realm) in the same isolate and heap as Node.
// Host tools are host-realm async functions put on the context's global;
// the guest awaits the host promises directly. No copying at the boundary.
import vm from "node:vm";
import { hostTools, wrapBody } from "../common.mjs";

export const name = "node:vm";

export async function load() {
  return {
    create(root) {
      const context = vm.createContext({});
      const tools = hostTools(root);
      // A plain guest object holding the host functions.
      context.tools = Object.assign(vm.runInContext("({})", context), tools);
      return { context };
    },
    async run(h, body) {
      return await vm.runInContext(wrapBody(body), h.context);
    },
    dispose(_h) {
      // Nothing to free explicitly: the context is garbage-collected.
    },
  };
}
