return new Array(1.2e6).fill(1).sort().length;
