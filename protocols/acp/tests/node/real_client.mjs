// The official ACP TypeScript SDK (@agentclientprotocol/sdk 2.4.x) as the client of an agent
// command, `all-protocols --stdio acp` in CI: `node real_client.mjs AGENT [ARGS...]`. It spawns
// the agent and runs, over its stdin/stdout: a plain prompt (echoed back), `read <file>` with
// the permission allowed (the file's content streams back, read through fs/read_text_file) and
// rejected (nothing read), a `slow` prompt cancelled mid-turn (`cancelled`), session/load (the
// conversation so far replayed as session/update notifications, every one read before the
// load's answer), a prompt to an unknown session (-32002), and end of input (the agent exits 0
// promptly). Prints one line per check and a summary; exits non-zero on the first failure.

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";

import * as acp from "@agentclientprotocol/sdk";

const FILE_TEXT = "hello from a file the agent may read";
const STEP_MS = 20_000;

let passed = 0;

function check(holds, claim) {
  if (!holds) {
    throw new Error(`check failed: ${claim}`);
  }
  console.log(`ok - ${claim}`);
  passed += 1;
}

function within(ms, promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The editor's side: answers permission questions as told, reads files, records updates. */
class Editor {
  allow = true;
  permissionQuestions = 0;
  reads = [];
  updates = [];

  kinds() {
    return this.updates.map((update) => update.sessionUpdate);
  }

  texts() {
    return this.updates
      .filter((update) => update.sessionUpdate === "agent_message_chunk")
      .map((update) => update.content?.text ?? "")
      .join("");
  }
}

/** Every message the client wrote and read, in order. */
class Wire {
  events = [];

  /** The SDK's message stream with each message recorded as it passes, both ways. */
  tap(stream) {
    const events = this.events;
    const readable = stream.readable.pipeThrough(
      new TransformStream({
        transform(message, controller) {
          events.push(["read", message]);
          controller.enqueue(message);
        },
      }),
    );
    const sent = new TransformStream({
      transform(message, controller) {
        events.push(["sent", message]);
        controller.enqueue(message);
      },
    });
    sent.readable.pipeTo(stream.writable).catch(() => {});
    return { readable, writable: sent.writable };
  }

  /** The updates of the session/update notifications read just before the answer to the last
   *  `method` request: what the agent replayed before answering it. */
  replayedBeforeAnswer(method) {
    const sent = this.events.filter(([way, m]) => way === "sent" && m.method === method);
    const id = sent[sent.length - 1][1].id;
    const read = this.events.filter(([way]) => way === "read").map(([, m]) => m);
    const answer = read.findIndex((m) => m.id === id && m.method === undefined);
    const replayed = [];
    for (let i = answer - 1; i >= 0 && read[i].method === "session/update"; i -= 1) {
      replayed.unshift(read[i].params.update);
    }
    return replayed;
  }
}

async function scenario(ctx, editor, wire, readable) {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: false } },
    clientInfo: { name: "ts-real-client", version: "0" },
  });
  check(init.protocolVersion === 1, "initialize negotiates protocol version 1");
  check(init.agentCapabilities?.loadSession === true, "the agent advertises loadSession");

  const cwd = process.cwd();
  const { sessionId } = await ctx.request(acp.methods.agent.session.new, {
    cwd,
    mcpServers: [],
  });
  const prompt = (text) =>
    ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text }],
    });

  let answer = await prompt("hello ts client");
  check(answer.stopReason === "end_turn", "a prompt ends its turn");
  check(editor.texts().includes("hello ts client"), "the prompt text streams back");

  editor.updates = [];
  editor.allow = true;
  answer = await prompt(`read ${readable}`);
  check(editor.permissionQuestions === 1, "reading asks permission");
  check(
    editor.reads.length === 1 && editor.reads[0] === readable,
    "allowed, the agent reads through fs/read_text_file",
  );
  check(
    editor.kinds().includes("tool_call") && editor.kinds().includes("tool_call_update"),
    "the read is reported as a tool call and its completion",
  );
  check(editor.texts().includes(FILE_TEXT), "the file's content streams back");
  check(answer.stopReason === "end_turn", "the read turn ends");

  editor.updates = [];
  editor.allow = false;
  await prompt(`read ${readable}`);
  check(editor.permissionQuestions === 2, "a second read asks again");
  check(editor.reads.length === 1, "rejected, nothing is read");

  editor.updates = [];
  const turn = prompt("slow please");
  while (editor.updates.length < 2) {
    await sleep(20);
  }
  await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
  answer = await within(STEP_MS, turn, "the cancelled turn");
  check(answer.stopReason === "cancelled", "a cancelled slow turn stops with cancelled");

  editor.updates = [];
  await ctx.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [] });
  const replayed = wire.replayedBeforeAnswer("session/load");
  check(
    JSON.stringify(replayed[0]) ===
      JSON.stringify({
        sessionUpdate: "user_message_chunk",
        content: { type: "text", text: "hello ts client" },
      }),
    "session/load replays the first prompt first, as a user_message_chunk",
  );
  check(replayed[1]?.content?.text === "echo: hello ts client", "then the agent's answer to it");
  const count = (kind) => replayed.filter((update) => update.sessionUpdate === kind).length;
  check(
    count("user_message_chunk") === 4 && count("tool_call") === 2,
    "every prompt and both reads are replayed",
  );
  // Notification handlers may run after the answer resolves; give them a moment.
  for (let i = 0; i < 200 && editor.updates.length < replayed.length; i += 1) {
    await sleep(10);
  }
  check(editor.updates.length === replayed.length, "the client's handler saw every replayed update");
  const fresh = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  await ctx.request(acp.methods.agent.session.load, {
    sessionId: fresh.sessionId,
    cwd,
    mcpServers: [],
  });
  check(wire.replayedBeforeAnswer("session/load").length === 0, "a new session replays nothing");

  try {
    await ctx.request(acp.methods.agent.session.prompt, {
      sessionId: "no-such-session",
      prompt: [{ type: "text", text: "hi" }],
    });
    check(false, "an unknown session is refused");
  } catch (error) {
    check(
      error instanceof acp.RequestError && error.code === -32002,
      "an unknown session is -32002, Resource not found",
    );
  }
}

async function run(agent) {
  const [program, ...args] = agent;
  const child = spawn(program, args, { stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  const dir = mkdtempSync(join(tmpdir(), "acp-ts-client-"));
  const readable = join(dir, "notes.txt");
  writeFileSync(readable, `${FILE_TEXT}\n`);

  const editor = new Editor();
  const wire = new Wire();
  const stream = wire.tap(acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
  const app = acp
    .client({ name: "acp-ts-client" })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      editor.permissionQuestions += 1;
      const wanted = editor.allow ? "allow_once" : "reject_once";
      const option = params.options.find((candidate) => candidate.kind === wanted);
      return option
        ? { outcome: { outcome: "selected", optionId: option.optionId } }
        : { outcome: { outcome: "cancelled" } };
    })
    .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
      editor.reads.push(params.path);
      return { content: readFileSync(params.path, "utf8") };
    })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      editor.updates.push(params.update);
    });
  try {
    await within(STEP_MS * 6, app.connectWith(stream, (ctx) => scenario(ctx, editor, wire, readable)), "the scenario");
    // The connection is closed; closing the agent's stdin (if the SDK left it open) is end of input.
    child.stdin.end();
    const code = await within(5_000, exited, "the agent's exit after end of input");
    check(code === 0, "the agent exits cleanly and promptly at end of input");
  } finally {
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

const agent = process.argv.slice(2);
if (agent.length === 0) {
  console.error("usage: node real_client.mjs AGENT_COMMAND [ARGS...]");
  process.exit(2);
}
let failed = 0;
try {
  await run(agent);
} catch (error) {
  failed = 1;
  console.log(`not ok - ${error?.stack ?? error}`);
}
console.log(`acp-ts-client: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
