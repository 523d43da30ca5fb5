return { [Symbol("s")]: 1, a: 2 };
