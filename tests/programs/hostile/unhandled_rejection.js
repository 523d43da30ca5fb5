tools.fail({});
await new Promise((r) => setTimeout(r, 10));
return "done";
