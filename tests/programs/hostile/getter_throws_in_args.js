try {
  await tools.echo({ get a() { throw new TypeError("getter") } });
  return "no error";
} catch (e) {
  return [e.name, e.message];
}
