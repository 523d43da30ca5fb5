// Node allows about 11 000 levels of this; the default engine stack allows at least 10 000.
function depth(n) {
  return n === 0 ? 0 : 1 + depth(n - 1);
}
return depth(10000);
