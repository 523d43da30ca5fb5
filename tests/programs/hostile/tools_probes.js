return [
  typeof tools.then,
  typeof tools.toString,
  typeof tools.constructor,
  tools.__proto__ === undefined,
  typeof tools.hasOwnProperty,
  Object.keys(tools),
];
