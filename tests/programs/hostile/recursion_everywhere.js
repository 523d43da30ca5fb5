// Recursion through every path that re-enters the engine: each ends in a catchable
// RangeError (or the converter's own depth error), and the run stays usable after it.
function depth(n) {
  return n === 0 ? 0 : 1 + depth(n - 1);
}
const ways = {
  plain: () => depth(1e7),
  getter: () => { const o = { get x() { return this.x; } }; return o.x; },
  toJSON: () => { const o = { toJSON() { return JSON.stringify(o); } }; return JSON.stringify(o); },
  proxy: () => { const p = new Proxy({}, { get(t, k, r) { return r[k]; } }); return p.x; },
  deepStringify: () => { let v = []; for (let i = 0; i < 2e5; i++) v = [v]; return JSON.stringify(v).length; },
  sort: () => [3, 2, 1].sort(function cmp(a, b) { return [2, 1].sort(cmp).length && a - b; }),
  // Where this one stops (a RangeError in a getter, or the call's conversion) depends on
  // the build's frame sizes: pinned is that it ends and the run goes on.
  toolArgs: async () => {
    const o = { get a() { tools.echo(o); return 1; } };
    try { await tools.echo(o); } catch {}
    return "ended";
  },
  template: () => { const t = { toString() { return `${t}`; } }; return `${t}`; },
};
const out = {};
for (const [name, way] of Object.entries(ways)) {
  try {
    out[name] = "returned " + typeof (await way());
  } catch (e) {
    out[name] = e.name + " / still usable: " + depth(10000);
  }
}
out.tenThousand = depth(10000);
return out;
