const a = { b: {} };
a.b.a = a;
try {
  await tools.echo(a);
} catch (e) {
  return e.message;
}
