const a = [];
while (true) a.push(new Array(100000).fill(7));
