// The official TypeScript SDK client, driven by tests/bridge_test.go over
// pikoctl mcp serve. Each line on stdin is a command ({"seq", "op", ...});
// each line on stdout is JSON tagged with the seq of the command it
// answers, or an asynchronous event ({"event": ...}).
//
// Usage: node bridge-driver.mjs PIKOCTL ARG...
//        node bridge-driver.mjs --http URL TOKEN
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ToolListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  PromptListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import readline from "node:readline";

const [cmd, ...args] = process.argv.slice(2);
const out = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");

const transport =
  cmd === "--http"
    ? new StreamableHTTPClientTransport(new URL(args[0]), { requestInit: { headers: { Authorization: "Bearer " + args[1] } } })
    : new StdioClientTransport({ command: cmd, args, env: process.env, stderr: "inherit" });
const client = new Client({ name: "ts-sdk-test-host", version: "9.8.7" }, { capabilities: {} });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => out({ event: "tools/list_changed" }));
client.setNotificationHandler(ResourceListChangedNotificationSchema, () => out({ event: "resources/list_changed" }));
client.setNotificationHandler(PromptListChangedNotificationSchema, () => out({ event: "prompts/list_changed" }));
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => out({ event: "resources/updated", uri: n.params.uri }));
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => out({ event: "message", level: n.params.level, data: n.params.data }));

const inflight = new Map();

async function run(c) {
  const opts = { timeout: 600000 };
  switch (c.op) {
    case "init":
      await client.connect(transport);
      return { serverInfo: client.getServerVersion(), capabilities: client.getServerCapabilities(), instructions: client.getInstructions() };
    case "listTools": {
      const tools = [];
      let cursor;
      do {
        const r = await client.listTools(cursor ? { cursor } : {}, opts);
        tools.push(...r.tools);
        cursor = r.nextCursor;
      } while (cursor);
      return { tools };
    }
    case "call": {
      const ac = new AbortController();
      inflight.set(c.seq, ac);
      let progressSeen = 0;
      try {
        const r = await client.callTool({ name: c.name, arguments: c.arguments ?? {} }, undefined, {
          ...opts,
          signal: ac.signal,
          resetTimeoutOnProgress: true,
          onprogress: c.progress
            ? (p) => {
                progressSeen++;
                out({ seq: c.seq, event: "progress", progress: p.progress, message: p.message });
                if (c.cancelAfterProgress && progressSeen >= c.cancelAfterProgress) ac.abort("test cancels");
              }
            : undefined,
        });
        return { result: r };
      } finally {
        inflight.delete(c.seq);
      }
    }
    case "cancel":
      inflight.get(c.target)?.abort("test cancels");
      return { cancelled: inflight.has(c.target) };
    case "listResources":
      return await client.listResources({}, opts);
    case "listTemplates":
      return await client.listResourceTemplates({}, opts);
    case "read":
      return await client.readResource({ uri: c.uri }, opts);
    case "subscribe":
      return await client.subscribeResource({ uri: c.uri }, opts);
    case "listPrompts":
      return await client.listPrompts({}, opts);
    case "getPrompt":
      return await client.getPrompt({ name: c.name, arguments: c.arguments ?? {} }, opts);
    case "complete":
      return await client.complete({ ref: c.ref, argument: c.argument }, opts);
    case "raw":
      // Any method by name, to show what the bridge refuses.
      return await client.request({ method: c.method, params: c.params ?? {} }, (await import("zod")).z.any(), opts);
    case "close":
      await client.close();
      return { closed: true };
  }
  throw new Error("unknown op " + c.op);
}

const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const c = JSON.parse(line);
  run(c).then(
    (r) => out({ seq: c.seq, ...r }),
    (e) => out({ seq: c.seq, error: String(e && e.message ? e.message : e), code: e && e.code }),
  );
});
rl.on("close", () => client.close().finally(() => process.exit(0)));
