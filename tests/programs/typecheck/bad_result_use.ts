// expect: TS2322 3:7
const file = await tools.read_file({ path: "a" });
const n: number = file.content;
