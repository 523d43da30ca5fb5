"use strict";

// The runner the host calls for a program with `export default`: runs the program
// function with its state, and, when it returns the exported value (`state.exported`, an
// own data property of an object without prototype) and that is a function,
// calls it. A class is not called (it needs `new`): it is the result, which is not JSON.
// `isClassSource(text)` is the host's check of a function's source.
internals.runDefault = async function runDefault(main, state, isClassSource) {
  const value = await main(state);
  if (typeof value !== "function" || value !== state.exported) return value;
  let source = "";
  try {
    source = ReflectApply(FunctionPrototypeToString, value, []);
  } catch {
    // A revoked proxy: not a class.
  }
  return isClassSource(source) ? value : await value();
};
