const p = new Proxy({}, { ownKeys() { throw new Error("trap") } });
try {
  await tools.echo(p);
} catch (e) {
  return e.message;
}
