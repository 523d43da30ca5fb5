return JSON.parse("[".repeat(10000) + "]".repeat(10000)).length;
