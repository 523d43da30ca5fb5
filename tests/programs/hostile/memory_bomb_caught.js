try {
  const a = [];
  while (true) a.push("x".repeat(100000) + a.length);
} catch (e) {}
return "survived";
