// expect: TS2322 2:38
const file = await tools.read_file({ path: 42 });
