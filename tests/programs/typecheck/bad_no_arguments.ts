// expect: TS2554 2:13
await tools.read_file();
