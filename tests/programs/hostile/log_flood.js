for (;;) console.log("x".repeat(1e4));
