// The host entered at the bottom of a recursion, where no JavaScript may run: it must
// neither give the engine room below its limit (a little more each round, until the host's
// own stack overflowed and the process aborted) nor leave it a limit far above (a valid
// call then failed with a RangeError and left the program a few levels of stack).
function depth(n) {
  try {
    return depth(n + 1);
  } catch {
    return n;
  }
}
// Each way re-enters the host from the bottom of a recursion, without awaiting anything.
const ways = {
  rejection: () => Promise.reject(1),
  handledRejection: () => Promise.reject(1).catch(() => {}),
  toolCall: () => tools.echo({ n: 1 }).catch(() => {}),
  consoleLog: () => console.log({ get x() { return 1; } }),
  toJSONInArguments: () => tools.echo({ toJSON: () => ({ n: 2 }) }).catch(() => {}),
  search: () => tools.$search("echo").catch(() => {}),
};
const drift = {};
for (const [name, way] of Object.entries(ways)) {
  const depths = [];
  for (let round = 0; round < 30; round++) {
    depths.push(depth(0));
    function deep(n) {
      try {
        return deep(n + 1);
      } catch {
        try {
          way();
        } catch {}
        return n;
      }
    }
    deep(0);
  }
  drift[name] = depths.every((d) => d === depths[0]) ? "none" : depths.join(",");
}
// A recursion inside a call's `toJSON` that rejects a promise at its bottom: the call goes
// through, and the program keeps its stack.
const before = depth(0);
function deepReject(n) {
  try {
    return deepReject(n + 1);
  } catch {
    Promise.reject(2).catch(() => {});
    return n;
  }
}
const echoed = await tools.echo({ toJSON: () => (deepReject(0), { n: 3 }) });
await null;
const after = depth(0);
return { drift, echoed, keepsItsStack: after > before * 0.9 };
