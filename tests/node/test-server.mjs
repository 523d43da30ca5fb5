// An MCP server for the tests of codemode's MCP client: the cases the real servers cannot
// show on demand. Built on the MCP TypeScript SDK's low-level `Server`.
//
//   node test-server.mjs [--log FILE] [--http] [--stay] [--odd-schema]
//
// Tools: `slow {ms, deaf}` (answers after ms, or notes its cancellation in FILE; with
// `deaf: true` it first stops reading its input, for good), `exit {code, orphan}`
// (the process exits mid-call; with `orphan: true` it first starts `sleep 30` holding its
// stdout open, and notes `orphan PID` in FILE), `steps {n, pause_ms}` (n progress notifications, then "done"),
// `add_tool {name}` (a new tool appears: notifications/tools/list_changed), `fail {message}`
// (an isError result), `rpc_error {message}` (a JSON-RPC error), `image {bytes}` (an image
// item of that size), `pid` (its process id, with an outputSchema), `bad_output` (structured
// content that breaks its outputSchema), `huge {bytes}` (a text that long), `deep {depth}`
// (structured content nested that deep). `tools/list` pages two tools at a time.
// Over stdio it notes `stdin closed` in FILE when its input ends, and exits then unless
// --stay is given; on SIGTERM it notes `terminated` and exits.
// With --http it serves streamable HTTP on a free loopback port and prints
// `listening http://127.0.0.1:PORT/mcp` on stdout.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";

const argv = process.argv.slice(2);
const logFile = argv.includes("--log") ? argv[argv.indexOf("--log") + 1] : null;
const note = (line) => logFile && appendFileSync(logFile, line + "\n");

const object = (properties, required = []) => ({ type: "object", properties, required });
const tools = [
  {
    name: "slow",
    description: "Answer after ms.",
    inputSchema: object({ ms: { type: "integer" }, deaf: { type: "boolean" } }, ["ms"]),
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  {
    name: "exit",
    description: "Exit the server process.",
    inputSchema: object({ code: { type: "integer" }, orphan: { type: "boolean" } }, ["code"]),
  },
  {
    name: "steps",
    description: "Report progress n times, pause_ms apart and before the answer.",
    inputSchema: object({ n: { type: "integer" }, pause_ms: { type: "integer" } }, ["n"]),
  },
  { name: "add_tool", description: "Add a tool.", inputSchema: object({ name: { type: "string" } }, ["name"]) },
  { name: "fail", description: "An isError result.", inputSchema: object({ message: { type: "string" } }, ["message"]) },
  { name: "rpc_error", description: "A JSON-RPC error.", inputSchema: object({ message: { type: "string" } }, ["message"]) },
  { name: "image", description: "An image of that many bytes.", inputSchema: object({ bytes: { type: "integer" } }, ["bytes"]) },
  {
    name: "pid",
    description: "The server's process id.",
    inputSchema: object({}),
    outputSchema: object({ pid: { type: "integer" } }, ["pid"]),
  },
  { name: "huge", description: "A text of that many bytes.", inputSchema: object({ bytes: { type: "integer" } }, ["bytes"]) },
  { name: "deep", description: "A result nested depth levels.", inputSchema: object({ depth: { type: "integer" } }, ["depth"]) },
  {
    name: "bad_output",
    description: "Structured content that breaks its own outputSchema.",
    inputSchema: object({}),
    outputSchema: object({ pid: { type: "integer" } }, ["pid"]),
  },
];

// With --odd-schema, one more tool whose schemas carry what an import keeps for display
// only (an unknown keyword, a draft-07 format codemode does not check).
if (argv.includes("--odd-schema")) {
  tools.push({
    name: "odd",
    description: "A tool with odd schemas.",
    inputSchema: {
      $schema: "http://json-schema.org/draft-07/schema#",
      ...object({ a: { type: "string", "x-widget": "area" }, r: { type: "string", format: "regex" } }),
    },
  });
}

function makeServer() {
  const server = new Server(
    { name: "codemode-test-server", version: "1.0.0" },
    { capabilities: { tools: { listChanged: true } } },
  );
  server.setRequestHandler(ListToolsRequestSchema, async (request) => {
    const start = Number(request.params?.cursor ?? 0);
    const page = tools.slice(start, start + 2);
    const next = start + 2 < tools.length ? String(start + 2) : undefined;
    return next ? { tools: page, nextCursor: next } : { tools: page };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const args = request.params.arguments ?? {};
    const text = (t) => ({ content: [{ type: "text", text: t }] });
    switch (request.params.name) {
      case "slow":
        if (args.deaf) process.stdin.pause();
        return await new Promise((resolve) => {
          const timer = setTimeout(() => resolve(text(`slept ${args.ms}`)), args.ms);
          extra.signal.addEventListener("abort", () => {
            clearTimeout(timer);
            note(`cancelled slow ${args.ms}`);
          });
        });
      case "exit":
        if (args.orphan) {
          const orphan = spawn("sleep", ["30"], { stdio: ["ignore", "inherit", "ignore"] });
          note(`orphan ${orphan.pid}`);
        }
        process.stderr.write(`exiting with ${args.code} on request\n`);
        process.exit(args.code);
      case "steps": {
        const token = request.params._meta?.progressToken;
        for (let i = 1; i <= args.n; i++) {
          if (token !== undefined) {
            await extra.sendNotification({
              method: "notifications/progress",
              params: { progressToken: token, progress: i, total: args.n, message: `step ${i}` },
            });
          }
          if (args.pause_ms) await new Promise((r) => setTimeout(r, args.pause_ms));
        }
        return text("done");
      }
      case "add_tool":
        tools.push({ name: args.name, description: "Added at run time.", inputSchema: object({}) });
        await server.sendToolListChanged();
        return text(`added ${args.name}`);
      case "fail":
        return { isError: true, content: [{ type: "text", text: args.message }] };
      case "rpc_error":
        throw new McpError(-32001, args.message);
      case "image":
        return {
          content: [{ type: "image", mimeType: "image/png", data: Buffer.alloc(args.bytes, 7).toString("base64") }],
        };
      case "deep": {
        let nest = 0;
        for (let i = 0; i < args.depth; i++) nest = [nest];
        return { content: [{ type: "text", text: "deep" }], structuredContent: { nest } };
      }
      case "huge":
        return text("y".repeat(args.bytes));
      case "bad_output":
        return { content: [{ type: "text", text: "x" }], structuredContent: { pid: "x" } };
      case "pid":
        return { content: [{ type: "text", text: String(process.pid) }], structuredContent: { pid: process.pid } };
      default:
        if (tools.some((t) => t.name === request.params.name)) return text(`${request.params.name} ran`);
        throw new McpError(-32602, `no tool ${request.params.name}`);
    }
  });
  return server;
}

if (argv.includes("--http")) {
  const http = createServer(async (req, res) => {
    // Stateless: a server and a transport per request.
    const server = makeServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => transport.close());
    await server.connect(transport);
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const auth = req.headers["authorization"] ?? "";
      note(`authorization ${auth}`);
      transport.handleRequest(req, res, body ? JSON.parse(body) : undefined);
    });
  });
  http.listen(0, "127.0.0.1", () => {
    process.stdout.write(`listening http://127.0.0.1:${http.address().port}/mcp\n`);
  });
} else {
  process.stderr.write("test server ready\n");
  process.stdin.on("end", () => {
    note("stdin closed");
    if (argv.includes("--stay")) setInterval(() => {}, 1000);
    else process.exit(0);
  });
  process.on("SIGTERM", () => {
    note("terminated");
    process.exit(0);
  });
  await makeServer().connect(new StdioServerTransport());
}
