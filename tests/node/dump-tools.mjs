// Writes the `tools/list` answer of real MCP servers to tests/fixtures/mcp/<name>.json.
// Run from tests/node after `npm ci`:  node dump-tools.mjs
// The fixtures are committed; this script regenerates them when the servers change.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { mkdtempSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "fixtures", "mcp");
mkdirSync(out, { recursive: true });
const scratch = mkdtempSync(join(tmpdir(), "codemode-fs-"));
const bin = (name) => join(here, "node_modules", ".bin", name);

const servers = {
  "server-everything": [bin("mcp-server-everything")],
  "server-filesystem": [bin("mcp-server-filesystem"), scratch],
  "server-memory": [bin("mcp-server-memory")],
};

for (const [name, [command, ...args]] of Object.entries(servers)) {
  const transport = new StdioClientTransport({ command, args, stderr: "ignore" });
  const client = new Client({ name: "codemode-fixtures", version: "1.0.0" });
  await client.connect(transport);
  const { tools } = await client.listTools();
  await client.close();
  const file = join(out, `${name}.json`);
  writeFileSync(file, JSON.stringify({ server: name, tools }, null, 2) + "\n");
  console.log(`${file}: ${tools.length} tools`);
}
