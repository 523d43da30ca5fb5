// expect: ok
try {
  await tools.read_file({ path: "missing.txt" });
} catch (e) {
  if (e instanceof ToolCallError) {
    const tool: string = e.toolName;
    console.warn(tool, e.message);
  }
}
await new Promise<void>((resolve) => setTimeout(resolve, 10));
const listing = await tools.list_dir({});
return listing.entries.map((e) => e.name);
