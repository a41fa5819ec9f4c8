// An MCP server on the official TypeScript SDK for our client's interop test: one of each feature
// the test exercises, with a resumable event store whose event ids are UUIDs.
// `node ts_server.mjs --stdio`, or `node ts_server.mjs --port N` (Streamable HTTP at /mcp).
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

function build() {
  const server = new McpServer({ name: 'interop-typescript', version: '1.0.0' });
  server.tool('echo', 'Echoes the message', { message: z.string() }, async ({ message }) => ({
    content: [{ type: 'text', text: message }],
  }));
  server.tool('add', 'Adds two numbers', { a: z.number(), b: z.number() }, async ({ a, b }) => ({
    content: [{ type: 'text', text: String(a + b) }],
  }));
  server.tool('work', 'Reports progress twice, then answers', {}, async (_args, extra) => {
    const token = extra._meta?.progressToken;
    if (token !== undefined) {
      for (const progress of [1, 2]) {
        await extra.sendNotification({
          method: 'notifications/progress',
          params: { progressToken: token, progress, total: 2 },
        });
      }
    }
    return { content: [{ type: 'text', text: 'done' }] };
  });
  server.tool('ask_user', 'Elicits a name', {}, async () => {
    const answer = await server.server.elicitInput({
      message: 'name?',
      requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    });
    return { content: [{ type: 'text', text: `hello ${answer.content?.name}` }] };
  });
  server.tool('ask_model', 'Samples the client model', {}, async () => {
    const answer = await server.server.createMessage({
      messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }],
      maxTokens: 10,
    });
    return { content: [{ type: 'text', text: `model said ${answer.model}` }] };
  });
  server.resource('alpha', 'test://a', async (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'alpha' }],
  }));
  server.prompt('greet', { who: z.string() }, ({ who }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `hello ${who}` } }],
  }));
  return server;
}

/** Keeps every event so a stream can be replayed after any of its ids. */
class MemoryEventStore {
  constructor() { this.events = []; }
  async storeEvent(streamId, message) {
    const eventId = `${streamId}_${randomUUID()}`;
    this.events.push({ eventId, streamId, message });
    return eventId;
  }
  async replayEventsAfter(lastEventId, { send }) {
    const at = this.events.findIndex((event) => event.eventId === lastEventId);
    if (at < 0) return '';
    const { streamId } = this.events[at];
    for (const event of this.events.slice(at + 1)) {
      if (event.streamId === streamId) await send(event.eventId, event.message);
    }
    return streamId;
  }
}

if (process.argv[2] === '--stdio') {
  await build().connect(new StdioServerTransport());
} else {
  const port = Number(process.argv[3]);
  const sessions = new Map();
  const eventStore = new MemoryEventStore();
  createServer(async (request, response) => {
    const chunks = [];
    for await (const chunk of request) chunks.push(chunk);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
    const id = request.headers['mcp-session-id'];
    let transport = id ? sessions.get(id) : undefined;
    if (!transport && body?.method === 'initialize') {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        eventStore,
        onsessioninitialized: (session) => sessions.set(session, transport),
      });
      await build().connect(transport);
    }
    if (!transport) {
      response.writeHead(id ? 404 : 400).end();
      return;
    }
    await transport.handleRequest(request, response, body);
  }).listen(port, '127.0.0.1');
}
