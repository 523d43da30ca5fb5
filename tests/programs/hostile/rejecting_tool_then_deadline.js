// A failing call is caught, then the program waits on calls that outlive the deadline.
try {
  await tools.fail({});
} catch {}
await Promise.all([tools.sleep({ ms: 60000 }), tools.sleep({ ms: 60000 })]);
