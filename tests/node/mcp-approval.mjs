// Drives `codemode mcp --ask` with the MCP TypeScript SDK's client through a call that
// needs approval; run by tests/all/mcp_server.rs. One argument, a JSON object:
//   {"stdio": [command, ...args], "code": PROGRAM, "elicit": "accept" | "decline" | null}
// With "elicit" the client declares the elicitation capability and answers every request
// so; without it the run pauses and the client resumes it with run_code_resume, approving
// every call it lists ("noResume": true leaves it paused; "resume": {id, decisions} only
// resumes, in a new session of a new server). Prints {"first", "resumed"?, "asked": [messages]} as JSON.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const options = JSON.parse(process.argv[2]);
const transport = new StdioClientTransport({
  command: options.stdio[0],
  args: options.stdio.slice(1),
  stderr: "inherit",
});
const client = new Client(
  { name: "codemode-approval-test", version: "1.0.0" },
  options.elicit ? { capabilities: { elicitation: {} } } : {},
);
const asked = [];
if (options.elicit) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params.message);
    return options.elicit === "accept" ? { action: "accept", content: {} } : { action: options.elicit };
  });
}
await client.connect(transport);

const call = async (name, args) => {
  const result = await client.callTool({ name, arguments: args });
  return {
    text: result.content.map((c) => c.text).join("\n"),
    structured: result.structuredContent,
    isError: result.isError ?? false,
  };
};

const seen = { asked };
seen.first = options.resume
  ? await call("run_code_resume", options.resume)
  : await call("run_code", { code: options.code });
const paused = seen.first.structured?.paused;
if (paused && !options.noResume) {
  seen.resumed = await call("run_code_resume", {
    id: paused.id,
    decisions: paused.approvals.map((a) => ({ call: a.call, approve: true })),
  });
}
await client.close();
process.stdout.write(JSON.stringify(seen));
