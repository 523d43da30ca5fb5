// expect: TS2353 2:38
await tools.tuples({ pair: [1, "a"], extra_key: 1, rest: ["a"] });
