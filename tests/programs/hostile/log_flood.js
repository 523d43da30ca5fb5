// Logs a long line every 10 ms without end: the deadline ends the run, and on any machine
// the output stays far below the console limit (at most a line per 10 ms).
let last = -Infinity;
for (;;) {
  const now = Date.now();
  if (now - last >= 10) {
    last = now;
    console.log("x".repeat(1e4));
  }
}
