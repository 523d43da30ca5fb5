return [
  typeof require,
  typeof process,
  typeof fetch,
  typeof std,
  typeof os,
  typeof Deno,
  typeof __codemode_host,
  (0, eval)("typeof tools"),
  new Function("return typeof require")(),
];
