// quickjs-wasm — raw quickjs-emscripten: Bellard's QuickJS compiled to
// WebAssembly, the synchronous (non-asyncify) RELEASE_SYNC variant.
//
// Host tools are guest functions made with ctx.newFunction. Each call dumps its
// argument to a host value (ctx.dump: JSON.stringify in the guest, JSON.parse
// on the host), starts the async host function, and returns a guest promise
// made with ctx.newPromise(); when the host promise settles, the host resolves
// the guest promise and drains the guest job queue (runtime.executePendingJobs).
// Objects go back into the guest as JSON text parsed by the guest's JSON.parse.
//
// The asyncify variant (newAsyncContext / newAsyncifiedFunction) is not used:
// it suspends the whole guest inside a host call, so a host function looks
// synchronous to the guest and concurrent calls (Promise.all of sleeps) would
// serialise. Host-created promises are the library's documented way to expose
// async host functions, and match how the Rust side exposes tools as promises.
//
// The WebAssembly module is compiled and instantiated once per process
// (getQuickJS()); a "fresh runtime" is a new QuickJSRuntime + QuickJSContext in
// that module, the analogue of a new rquickjs Runtime + Context.
import { getQuickJS } from "quickjs-emscripten";
import { hostTools, TOOL_NAMES, wrapBody } from "../common.mjs";

export const name = "quickjs-wasm";

function errorMessage(e) {
  return e && typeof e === "object" && "message" in e ? String(e.message) : String(e);
}

export async function load() {
  const QuickJS = await getQuickJS();
  return {
    create(root) {
      const tools = hostTools(root);
      const rt = QuickJS.newRuntime();
      const ctx = rt.newContext();
      const jsonParse = ctx.unwrapResult(ctx.evalCode("JSON.parse"));

      const drain = () => {
        for (;;) {
          const r = rt.executePendingJobs();
          if (!r.error) { r.dispose(); return; }
          r.error.dispose(); // a job threw; keep draining
        }
      };

      const toGuest = (v) => {
        if (v === null) return ctx.null;
        switch (typeof v) {
          case "undefined": return ctx.undefined;
          case "number": return ctx.newNumber(v);
          case "string": return ctx.newString(v);
          case "boolean": return v ? ctx.true : ctx.false;
          default: {
            const text = ctx.newString(JSON.stringify(v));
            const res = ctx.callFunction(jsonParse, ctx.undefined, text);
            text.dispose();
            return ctx.unwrapResult(res);
          }
        }
      };

      const toolsObj = ctx.newObject();
      for (const t of TOOL_NAMES) {
        const fn = tools[t];
        const f = ctx.newFunction(t, (argHandle) => {
          const arg = argHandle === undefined ? undefined : ctx.dump(argHandle);
          const deferred = ctx.newPromise();
          let p;
          try { p = fn(arg); } catch (e) { p = Promise.reject(e); }
          p.then(
            (value) => {
              if (!ctx.alive) return;
              const h = toGuest(value);
              deferred.resolve(h);
              h.dispose();
              drain();
            },
            (err) => {
              if (!ctx.alive) return;
              const h = ctx.newError(errorMessage(err));
              deferred.reject(h);
              h.dispose();
              drain();
            },
          );
          // The caller's scope frees deferred.handle after the call returns;
          // deferred.resolve/reject free the resolver handles.
          return deferred.handle;
        });
        ctx.setProp(toolsObj, t, f);
        f.dispose();
      }
      ctx.setProp(ctx.global, "tools", toolsObj);
      toolsObj.dispose();
      return { rt, ctx, jsonParse, drain };
    },
    async run(h, body) {
      const { ctx, drain } = h;
      const promiseHandle = ctx.unwrapResult(ctx.evalCode(wrapBody(body), "program.js"));
      const settled = ctx.resolvePromise(promiseHandle);
      promiseHandle.dispose();
      drain();
      const r = await settled;
      if (r.error) {
        const e = ctx.dump(r.error);
        r.error.dispose();
        throw new Error("guest error: " + (e && e.message ? `${e.name || "Error"}: ${e.message}` : JSON.stringify(e)));
      }
      const value = ctx.dump(r.value);
      r.value.dispose();
      return value;
    },
    dispose(h) {
      h.jsonParse.dispose();
      h.ctx.dispose();
      h.rt.dispose();
    },
  };
}
