setInterval(() => {}, 5);
await new Promise(() => {});
