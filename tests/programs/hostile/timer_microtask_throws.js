setTimeout(() => queueMicrotask(() => { null.y }), 1);
await new Promise((r) => setTimeout(r, 50));
return "not reached";
