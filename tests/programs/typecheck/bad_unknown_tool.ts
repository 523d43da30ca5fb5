// expect: TS2551 2:23
const f = await tools.reed_file({ path: "a" });
