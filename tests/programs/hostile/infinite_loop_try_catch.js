for (;;) {
  try {
    while (true) {}
  } catch (e) {}
}
