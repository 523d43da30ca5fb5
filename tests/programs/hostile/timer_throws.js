setTimeout(() => { throw new RangeError("late") }, 1);
await new Promise((r) => setTimeout(r, 50));
