return new Map([["k", 1]]);
