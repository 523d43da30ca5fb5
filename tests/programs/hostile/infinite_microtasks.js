async function spin() {
  await null;
  return spin();
}
await spin();
