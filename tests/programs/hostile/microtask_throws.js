queueMicrotask(() => { throw new TypeError("in a microtask") });
await 0;
return "not reached";
