// This repository read through the official MCP filesystem server, started by codemode:
//
//   codemode run --mcp fs="npx -y @modelcontextprotocol/server-filesystem ." examples/mcp_files.ts
//
// Its tools are `tools["fs.<tool>"]` (or `tools.fs_<tool>`); those with an outputSchema
// resolve to their structured content, here `{content: string}`.
const [examples, readme, cargo] = await Promise.all([
  tools.fs_list_directory({ path: "examples" }),
  tools.fs_read_text_file({ path: "README.md" }),
  tools["fs.read_text_file"]({ path: "Cargo.toml", head: 30 }),
]);

const files = examples.content
  .split("\n")
  .filter((line) => line.startsWith("[FILE] "))
  .map((line) => line.slice("[FILE] ".length));
const sections = readme.content
  .split("\n")
  .filter((line) => line.startsWith("## "))
  .map((line) => line.slice(3));
const version = /^version = "(.*)"$/m.exec(cargo.content)?.[1];

console.log(`codemode ${version}: ${files.length} example programs, ${sections.length} README sections`);
return { examples: files, readme_sections: sections };
