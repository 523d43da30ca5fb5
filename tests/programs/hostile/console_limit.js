// 100 MB of console output, over any console limit: the run ends when it passes the limit,
// however fast the machine.
for (let i = 0; i < 1e4; i++) console.log("x".repeat(1e4));
return "not stopped";
