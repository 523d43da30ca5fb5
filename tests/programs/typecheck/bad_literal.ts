// expect: TS2322 2:31
await tools.one_of({ shape: { kind: "triangle", r: 1 } });
