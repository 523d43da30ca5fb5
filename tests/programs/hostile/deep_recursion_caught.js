function f() {
  return f();
}
try {
  f();
} catch (e) {
  return e.name + ": " + e.message;
}
