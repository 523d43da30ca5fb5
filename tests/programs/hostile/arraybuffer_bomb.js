try {
  new ArrayBuffer(512 * 1024 * 1024);
} catch (e) {}
return "caught";
