return Array.prototype.indexOf.call({ length: 2 ** 32 - 1 }, 1);
