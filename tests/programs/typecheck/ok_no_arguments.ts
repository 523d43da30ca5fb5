// expect: ok
const listing = await tools.list_dir();
const everything = await tools.empty_input();
return [listing.path, everything];
