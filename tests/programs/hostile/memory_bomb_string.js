let s = "x";
while (true) {
  s += s;
  s = s.slice(1) + "y";
}
