try {
  await tools.echo({ a: { toJSON() { throw new Error("tj") } } });
  return "no error";
} catch (e) {
  return [e.name, e.message];
}
