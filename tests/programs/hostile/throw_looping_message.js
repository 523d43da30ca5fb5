// The thrown error's message getter loops: reading it is stopped by the deadline, and the
// run says it timed out (not an error with an empty message).
const e = new Error("x");
Object.defineProperty(e, "message", { get() { while (true) {} } });
throw e;
