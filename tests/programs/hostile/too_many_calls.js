let made = 0;
try {
  for (;;) {
    await tools.echo({});
    made++;
  }
} catch (e) {
  return [made, e.message];
}
