// expect: TS2345 2:36
const file = await tools.read_file({ offset: 3 });
