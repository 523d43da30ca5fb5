const p = new Proxy({}, {
  ownKeys: () => ["a", "b"],
  getOwnPropertyDescriptor: () => ({ value: 1, enumerable: true, configurable: true }),
  get: (t, k) => (k === "a" ? 1 : k === "b" ? [2] : undefined),
});
return await tools.echo(p);
