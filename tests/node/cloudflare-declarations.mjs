// Print the TypeScript declarations that @cloudflare/codemode 0.5.6 generates
// for a set of MCP tools, so their size can be compared with ours.
//
//   cd tests/node && npm ci
//   node cloudflare-declarations.mjs ../fixtures/mcp/server-everything.json
//
// Input: a fixture {"server": name, "tools": [{name, description, inputSchema,
// outputSchema?, ...}]}. Output (stdout, nothing else): the generated text.
//
// The generator is `generateTypesFromJsonSchema(tools)`: the plain-JSON-Schema
// generator that Cloudflare's MCP paths use (McpConnector#getTypeScriptTypes,
// codeMcpServer). It is publicly exported from "@cloudflare/codemode", but that
// entry imports `cloudflare:workers` and cannot load under Node, so we import
// the very same function from the dependency-free chunk that entry re-exports
// it from (`export { ..., t as generateTypesFromJsonSchema }`). The chunk's
// hashed file name is specific to the pinned version 0.5.6.
import { readFileSync } from "node:fs";
import { t as generateTypesFromJsonSchema } from "./node_modules/@cloudflare/codemode/dist/json-schema-types-D_m9tVnI.js";

const [fixturePath] = process.argv.slice(2);
if (!fixturePath) {
  console.error("usage: node cloudflare-declarations.mjs <fixture.json>");
  process.exit(2);
}
const { tools } = JSON.parse(readFileSync(fixturePath, "utf8"));

// Keyed by the raw MCP tool name: the generator sanitizes it itself and falls
// back to it as the JSDoc text when a tool has no description. Schemas are
// passed through untouched. `title`, `annotations` and `execution` have no slot
// in their descriptor (their MCP connectors drop them too).
const descriptors = {};
for (const tool of tools) {
  descriptors[tool.name] = {
    description: tool.description,
    inputSchema: tool.inputSchema,
    ...(tool.outputSchema && { outputSchema: tool.outputSchema }),
  };
}

process.stdout.write(generateTypesFromJsonSchema(descriptors));
