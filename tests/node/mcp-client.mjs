// Drives `codemode mcp` with the MCP TypeScript SDK's client, as a real MCP client would;
// run by tests/all/mcp_server.rs. One argument, a JSON object:
//   {"stdio": [command, ...args]} or {"http": "http://127.0.0.1:PORT/mcp"},
//   "upstream": true   to call tools["everything.echo"] from a program,
//   "pidfile": PATH    to cancel a run that waits on the manifest tool `sleep`,
//   "progress": true   to ask for progress on a run that calls `t.steps` (an upstream
//                      test-server.mjs named `t`) twice.
//   "jobs": {"http": URL, "pidfile": PATH}
//                      (with a server started with --yield-after 300) to run a program
//                      longer than the client's request timeout and follow it with
//                      job_output; to try another session's job id from a second session
//                      (URL); and to end a session whose background job waits on the
//                      manifest tool `sleep` (PATH), which must then be killed.
// Prints one JSON object with what it saw; the test asserts on it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { readFileSync } from "node:fs";

const options = JSON.parse(process.argv[2]);
const transport = options.stdio
  ? new StdioClientTransport({
      command: options.stdio[0],
      args: options.stdio.slice(1),
      stderr: "inherit",
    })
  : new StreamableHTTPClientTransport(new URL(options.http));
const client = new Client({ name: "codemode-test", version: "1.0.0" });
await client.connect(transport);
const seen = {};

const run = async (code, requestOptions) => {
  const result = await client.callTool(
    { name: "run_code", arguments: { code } },
    undefined,
    requestOptions,
  );
  return {
    text: result.content.map((c) => c.text).join("\n"),
    structured: result.structuredContent,
    isError: result.isError ?? false,
  };
};

// Polls `check` every 20 ms until it returns a value other than undefined, for at most 20 s.
const until = async (what, check) => {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};
const alive = (pid) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !stat.slice(stat.lastIndexOf(") ") + 2).startsWith("Z");
  } catch {
    return false;
  }
};

const { tools } = await client.listTools();
seen.tools = tools.map((t) => t.name);
seen.answer = await run("return 6 * 7");

if (options.upstream) {
  seen.echo = await run('return await tools["everything.echo"]({ message: "hi" })');
}

if (options.progress) {
  const reports = [];
  // Paused between reports: the client under test handles each notification on a task of
  // its own, and a report that overtook another would drop it.
  const code = "await tools.t_steps({ n: 2, pause_ms: 100 }); return await tools.t_steps({ n: 3, pause_ms: 100 })";
  seen.steps = await run(code, {
    onprogress: (p) => reports.push(p),
  });
  seen.progress = reports;
}

if (options.pidfile) {
  const abort = new AbortController();
  const code = `await tools.sleep({ pidfile: ${JSON.stringify(options.pidfile)} }); return "not cancelled"`;
  const call = run(code, { signal: abort.signal, timeout: 120_000 });
  const pid = await until("the sleep tool's pid", () => {
    try {
      const text = readFileSync(options.pidfile, "utf8").trim();
      return text ? Number(text) : undefined;
    } catch {
      return undefined;
    }
  });
  abort.abort("the test cancels the run");
  seen.cancelled = await call.then(
    (r) => ({ finished: r }),
    (e) => ({ rejected: String(e) }),
  );
  seen.sleepKilled = await until("the sleep tool to be killed", () =>
    alive(pid) ? undefined : true,
  );
  seen.after = await run("return 'still here'");
}

if (options.jobs) {
  const call = (name, args, requestOptions) =>
    client.callTool({ name, arguments: args }, undefined, requestOptions);
  // Every request must answer within 1.5 s; the program needs about 2.5 s.
  const quick = { timeout: 1_500 };
  const code =
    "console.log('step 1'); await new Promise(r => setTimeout(r, 2500)); console.log('step 2'); return 'long done'";
  const first = await call("run_code", { code }, quick);
  const id = first.structuredContent.job_id;
  seen.first = {
    text: first.content.map((c) => c.text).join("\n"),
    structured: first.structuredContent,
    isError: first.isError ?? false,
  };
  const polls = [];
  for (;;) {
    const r = await call("job_output", { job_id: id, wait_ms: 1_000 }, quick);
    polls.push(r.structuredContent);
    if (r.structuredContent.status !== "running") break;
    if (polls.length > 40) throw new Error("the job never ended");
  }
  seen.output = polls.map((p) => p.output).join("");
  seen.last = polls[polls.length - 1];

  // Another session may not read or kill this session's job.
  const other = new Client({ name: "codemode-test-other", version: "1.0.0" });
  const otherTransport = new StreamableHTTPClientTransport(new URL(options.jobs.http));
  await other.connect(otherTransport);
  const stranger = async (name) => {
    const r = await other.callTool({ name, arguments: { job_id: id } });
    return { isError: r.isError ?? false, text: r.content.map((c) => c.text).join("\n") };
  };
  seen.strangerReads = await stranger("job_output");
  seen.strangerKills = await stranger("job_kill");

  // A session that ends takes its jobs with it.
  const bg = await call("run_code", {
    code: `await tools.sleep({ pidfile: ${JSON.stringify(options.jobs.pidfile)} })`,
    run_in_background: true,
  });
  seen.background = { ...bg.structuredContent, isError: bg.isError ?? false };
  const pid = await until("the sleep tool's pid", () => {
    try {
      const text = readFileSync(options.jobs.pidfile, "utf8").trim();
      return text ? Number(text) : undefined;
    } catch {
      return undefined;
    }
  });
  await transport.terminateSession();
  seen.sleepKilledWithSession = await until("the session's job to be killed", () =>
    alive(pid) ? undefined : true,
  );
  await otherTransport.terminateSession();
  await other.close();
}

if (transport.terminateSession && !options.jobs) await transport.terminateSession();
await client.close();
console.log(JSON.stringify(seen));
