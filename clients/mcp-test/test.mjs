// agentjail mcp, driven by the official MCP TypeScript SDK as its client.
// cmd/agentjail/mcp_node_test.go runs it (after npm ci) with
// AGENTJAIL_MCP_SERVER = {"command": ..., "args": [...], "env": {...}}: the
// server to start over stdio. It prints one line per check and exits 1 at
// the first that fails. The checks: the tools and their schemas; programs
// that print, raise, are killed by the memory limit and plot (a PNG of
// figsize × dpi); a shell command; a session across three calls and a
// command in it; an unknown tool, wrong argument types, code past the
// request limit; and, last, a second client that closes mid-call.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const server = JSON.parse(process.env.AGENTJAIL_MCP_SERVER);
const transport = new StdioClientTransport({ ...server, stderr: "inherit" });
const client = new Client({ name: "agentjail-mcp-test", version: "1.0.0" });

function text(res) {
  return res.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

async function check(name, f) {
  try {
    await f();
    console.log(`ok ${name}`);
  } catch (e) {
    console.log(`FAIL ${name}: ${e.stack || e}`);
    await client.close().catch(() => {});
    process.exit(1);
  }
}

await check("connect", async () => {
  await client.connect(transport);
  assert.equal(client.getServerVersion().name, "agentjail");
});

await check("list tools", async () => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  assert.deepEqual(names, ["list_environments", "run_command", "run_python", "session_end", "session_run", "session_start"]);
  for (const t of tools) {
    assert.ok(t.description.length > 40, `${t.name}: a description`);
    assert.equal(t.inputSchema.type, "object");
  }
  const run = tools.find((t) => t.name === "run_python");
  assert.deepEqual(run.inputSchema.required, ["code"]);
  assert.match(run.inputSchema.properties.limits.properties.memory_bytes.description, /Default \d+/);
  const call = tools.find((t) => t.name === "session_run");
  assert.deepEqual(call.inputSchema.required, ["session_id"], "code or command: neither is required alone");
  assert.match(call.inputSchema.properties.command.description, /bash -c/);
  for (const name of ["run_python", "run_command", "session_start"]) {
    const network = tools.find((t) => t.name === name).inputSchema.properties.network;
    assert.deepEqual(Object.keys(network.properties).sort(), ["allow", "policy"], `${name}: network`);
    assert.match(network.description, /\{"policy": "NAME"\}/);
  }
});

await check("run_python prints", async () => {
  const res = await client.callTool({ name: "run_python", arguments: { code: "print('hello from node')" } });
  assert.ok(!res.isError, text(res));
  assert.match(text(res), /^agentjail: exit 0 · wall /);
  assert.match(text(res), /hello from node/);
  assert.equal(res.structuredContent.status, "ok");
  assert.equal(res.structuredContent.stdout, "hello from node\n");
});

await check("run_python raises", async () => {
  const res = await client.callTool({ name: "run_python", arguments: { code: "x = 1\nraise ValueError('bad value')\n" } });
  assert.ok(!res.isError, "a program that raises is a normal answer");
  assert.equal(res.structuredContent.status, "error");
  assert.equal(res.structuredContent.exception.type, "ValueError");
  assert.equal(res.structuredContent.exception.line, 2);
  assert.match(text(res), /exception: ValueError: bad value \(line 2\)/);
  assert.ok(res.structuredContent.feedback.length > 0);
});

await check("run_python killed by the memory limit", async () => {
  const res = await client.callTool({
    name: "run_python",
    arguments: { code: "b = bytearray(512 * 2**20)\nprint('not reached')", limits: { memory_bytes: 64 * 2 ** 20 } },
  });
  assert.ok(!res.isError, text(res));
  assert.equal(res.structuredContent.status, "killed");
  assert.equal(res.structuredContent.kill_reason, "memory_limit");
  assert.match(text(res), /killed \(memory_limit\)/);
});

await check("run_python plots: the figure is image content, a PNG of figsize × dpi", async () => {
  const code = [
    "import matplotlib.pyplot as plt",
    "fig = plt.figure(figsize=(4, 3), dpi=50)",
    "plt.plot(range(1000), [i * i for i in range(1000)])",
    "plt.show()",
  ].join("\n");
  const res = await client.callTool({ name: "run_python", arguments: { code } });
  assert.ok(!res.isError, text(res));
  assert.equal(res.structuredContent.status, "ok", text(res));
  const images = res.content.filter((c) => c.type === "image");
  assert.equal(images.length, 1, "one figure, one image");
  assert.equal(images[0].mimeType, "image/png");
  const png = Buffer.from(images[0].data, "base64");
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], "the PNG signature");
  assert.equal(png.subarray(12, 16).toString("latin1"), "IHDR", "the first chunk is IHDR");
  assert.equal(png.readUInt32BE(16), 4 * 50, "width: 4 in × 50 dpi");
  assert.equal(png.readUInt32BE(20), 3 * 50, "height: 3 in × 50 dpi");
  assert.equal(res.structuredContent.display.length, 1);
  assert.equal(res.structuredContent.display[0].bytes, png.length);
});

await check("run_command runs a shell command line", async () => {
  const res = await client.callTool({ name: "run_command", arguments: { command: "echo hi | tr a-z A-Z; exit 3" } });
  assert.ok(!res.isError, text(res));
  assert.equal(res.structuredContent.exit_code, 3);
  assert.equal(res.structuredContent.stdout, "HI\n");
});

await check("a session keeps its state across three calls", async () => {
  const start = await client.callTool({ name: "session_start", arguments: {} });
  assert.ok(!start.isError, text(start));
  const id = start.structuredContent.id;
  assert.match(id, /^s-/);
  for (const code of ["x = 40", "x += 2"]) {
    const r = await client.callTool({ name: "session_run", arguments: { session_id: id, code } });
    assert.ok(!r.isError, text(r));
    assert.equal(r.structuredContent.status, "ok");
  }
  const r = await client.callTool({ name: "session_run", arguments: { session_id: id, code: "open('x.txt', 'w').write(str(x))\nx" } });
  assert.equal(r.structuredContent.value, "42");
  assert.equal(r.structuredContent.session.calls, 3);
  assert.match(text(r), /value: 42/);
  const c = await client.callTool({ name: "session_run", arguments: { session_id: id, command: "cat x.txt; exit 5" } });
  assert.ok(!c.isError, text(c));
  assert.equal(c.structuredContent.stdout, "42", "a command sees the files of the session's code");
  assert.equal(c.structuredContent.exit_code, 5);
  assert.equal(c.structuredContent.session.alive, true);
  const both = await client.callTool({ name: "session_run", arguments: { session_id: id, code: "x", command: "ls" } });
  assert.ok(both.isError);
  assert.match(text(both), /code or command, not both/);
  const end = await client.callTool({ name: "session_end", arguments: { session_id: id } });
  assert.ok(!end.isError, text(end));
  const after = await client.callTool({ name: "session_run", arguments: { session_id: id, code: "x" } });
  assert.ok(after.isError, "a call to an ended session is an error");
});

await check("list_environments", async () => {
  const res = await client.callTool({ name: "list_environments", arguments: {} });
  assert.ok(!res.isError, text(res));
  assert.ok(res.structuredContent.environments.some((e) => e.name === "default"));
  assert.match(text(res), /network policies: none/, "the configuration has no network policy");
});

await check("an unknown tool is a protocol error", async () => {
  await assert.rejects(client.callTool({ name: "run_ruby", arguments: { code: "1" } }), /unknown tool/);
});

await check("wrong argument types are a tool error that says which", async () => {
  const res = await client.callTool({ name: "run_python", arguments: { code: 5 } });
  assert.ok(res.isError);
  assert.match(text(res), /code/);
  const res2 = await client.callTool({ name: "run_python", arguments: { code: "pass", limits: { memory_bytes: "lots" } } });
  assert.ok(res2.isError);
  assert.match(text(res2), /memory_bytes/);
});

await check("huge code (past the request limit) is a tool error that says what to do", async () => {
  const res = await client.callTool({ name: "run_python", arguments: { code: "#".repeat(2 * 2 ** 20) } });
  assert.ok(res.isError, "a request over max_request_bytes");
  assert.match(text(res), /413/);
  assert.match(text(res), /send less/);
  const after = await client.callTool({ name: "run_python", arguments: { code: "print('still here')" } });
  assert.equal(after.structuredContent.stdout, "still here\n", "the server goes on");
});

await client.close();

// A second client goes mid-call: it closes the connection while a run
// and a session are alive. The server ends them and exits on its own;
// the Go test then checks that no jail process or cgroup is left.
const second = new Client({ name: "agentjail-mcp-test-leaver", version: "1.0.0" });
const leaving = new StdioClientTransport({ ...server, stderr: "inherit" });
await check("a client that closes mid-call", async () => {
  await second.connect(leaving);
  const pid = leaving.pid;
  assert.ok(pid > 0);
  const start = await second.callTool({ name: "session_start", arguments: {} });
  assert.ok(!start.isError, text(start));
  let running;
  const printed = new Promise((resolve) => (running = resolve));
  const call = second.callTool(
    { name: "run_python", arguments: { code: "print('spinning', flush=True)\nwhile True: pass", limits: { wall_time_ms: 120000, cpu_time_ms: 120000 } } },
    undefined,
    { onprogress: running, timeout: 120000 },
  );
  call.catch(() => {});
  await printed; // the program runs: its first line came back as progress
  // close() ends stdin and waits up to 2 s for the server to exit before
  // it sends SIGTERM: the server must exit by itself, its calls cancelled
  // and its sessions ended, well before that.
  const t0 = Date.now();
  await second.close();
  const took = Date.now() - t0;
  assert.ok(took < 1900, `agentjail mcp exited by itself after its client closed (took ${took} ms)`);
  await assert.rejects(call, "the call in flight ends with the connection");
  assert.throws(() => process.kill(pid, 0), "the server's process is gone");
});

console.log("done");
