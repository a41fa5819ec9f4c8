// Drives a running A2A server with the official JavaScript SDK's client (@a2a-js/sdk):
// card discovery, blocking and streaming send, get, list, cancel, resubscribe, a multi-turn
// exchange, push-config CRUD and typed errors, over JSON-RPC and HTTP+JSON, in 1.0 and in 0.3.
// Usage: node a2a_js_client.mjs BASE_URL, with A2A_JS_MODULES naming the node_modules folder
// the SDK is installed in. Runs every check, prints a summary, exits non-zero on any failure.

import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';

const base = process.argv[2];
const modules = process.env.A2A_JS_MODULES;
if (!base || !modules) {
  console.error('usage: A2A_JS_MODULES=DIR node a2a_js_client.mjs BASE_URL');
  process.exit(2);
}
const require = createRequire(`${modules}/`);
const sdk = require('@a2a-js/sdk');
const client = require('@a2a-js/sdk/client');
const errors = require('@a2a-js/sdk/errors');
const sdkVersion = JSON.parse(readFileSync(`${modules}/@a2a-js/sdk/package.json`, 'utf8')).version;
const { Role, TaskState } = sdk;
const { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory } = client;

let passed = 0;
const failures = [];

async function check(what, body) {
  try {
    const detail = await body();
    passed += 1;
    console.log(`ok: ${what}${detail ? ` (${detail})` : ''}`);
  } catch (error) {
    failures.push(what);
    console.log(`FAIL: ${what}: ${error?.stack ?? error}`);
  }
}

function assert(condition, message) {
  if (!condition) throw new Error(message);
}

function message(text, taskId) {
  return {
    messageId: randomUUID(),
    contextId: '',
    taskId: taskId ?? '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function request(text, configuration, taskId) {
  return { tenant: '', message: message(text, taskId), configuration, metadata: undefined };
}

function returnImmediately() {
  return { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true };
}

function artifactText(task) {
  return task.artifacts
    .flatMap((artifact) => artifact.parts)
    .map((part) => (part.content?.$case === 'text' ? part.content.value : ''))
    .join('');
}

function isTask(result) {
  return result && typeof result.id === 'string' && result.status !== undefined;
}

function cases(events) {
  return events.map((event) => event.payload?.$case);
}

const transports = [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } }),
                    new RestTransportFactory({ legacyCompat: { enabled: true } })];

/// A client of `binding`: for 1.0 from the card as published; for 0.3 from the card a 0.3
/// client reads (asked for with `A2A-Version: 0.3`), translated by the SDK's 0.3 support.
async function connect(version, binding) {
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports,
    preferredTransports: [binding],
  });
  if (version === '1.0') {
    return new ClientFactory(options).createFromUrl(base);
  }
  const resolver = new DefaultAgentCardResolver({
    legacyCompat: { enabled: true },
    fetchImpl: (url, init) => fetch(url, { ...init, headers: { 'A2A-Version': '0.3' } }),
  });
  const card = await resolver.resolve(base);
  return new ClientFactory({ ...options, cardResolver: resolver }).createFromAgentCard(card);
}

async function collect(stream, until) {
  const events = [];
  for await (const event of stream) {
    events.push(event);
    if (until && until(event)) break;
  }
  return events;
}

async function suite(version, binding) {
  const label = `${binding} ${version}`;
  let agent;
  await check(`${label}: card discovered and a ${version} client created`, async () => {
    agent = await connect(version, binding);
    assert(agent.transport.protocolName === binding, `transport ${agent.transport.protocolName}`);
    assert(agent.protocolVersion.startsWith(version), `version ${agent.protocolVersion}`);
    return `${agent.transport.constructor.name}`;
  });
  if (!agent) return;

  let done;
  await check(`${label}: blocking send completes the task with its echo`, async () => {
    done = await agent.sendMessage(request('hello'));
    assert(isTask(done), `not a task: ${JSON.stringify(done)}`);
    assert(done.status.state === TaskState.TASK_STATE_COMPLETED, `state ${done.status.state}`);
    assert(artifactText(done) === 'echo: hello', `artifact ${artifactText(done)}`);
  });

  await check(`${label}: streaming send yields the task, updates, the artifact and the final status`, async () => {
    const events = await collect(agent.sendMessageStream(request('hi there')));
    const kinds = cases(events);
    assert(kinds[0] === 'task', `first ${kinds[0]}`);
    assert(kinds.includes('artifactUpdate'), `no artifact in ${kinds}`);
    const last = events.at(-1).payload;
    assert(last.$case === 'statusUpdate' && last.value.status.state === TaskState.TASK_STATE_COMPLETED,
      `last ${JSON.stringify(last)}`);
    return kinds.join(',');
  });

  await check(`${label}: get returns the task`, async () => {
    const fetched = await agent.getTask({ tenant: '', id: done.id, historyLength: 1 });
    assert(fetched.id === done.id, `id ${fetched.id}`);
    assert(fetched.history.length <= 1, `history ${fetched.history.length}`);
  });

  if (version === '1.0') {
    await check(`${label}: list pages through tasks, newest first`, async () => {
      const page = await agent.listTasks({ tenant: '', contextId: '', status: 0, pageSize: 1, pageToken: '',
        historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: undefined });
      assert(page.tasks.length === 1, `tasks ${page.tasks.length}`);
      assert(page.nextPageToken !== '', 'no next page');
      assert(page.totalSize >= 2, `total ${page.totalSize}`);
      const byContext = await agent.listTasks({ tenant: '', contextId: done.contextId, status: 0, pageSize: 10,
        pageToken: '', historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: undefined });
      assert(byContext.tasks.length === 1 && byContext.tasks[0].id === done.id, 'contextId filter');
    });
  }

  await check(`${label}: cancel stops a streaming slow task`, async () => {
    const stream = agent.sendMessageStream(request('slow one'));
    const first = (await stream.next()).value;
    assert(first.payload.$case === 'task', `first ${first.payload.$case}`);
    const canceled = await agent.cancelTask({ tenant: '', id: first.payload.value.id, metadata: undefined });
    assert(canceled.status.state === TaskState.TASK_STATE_CANCELED, `state ${canceled.status.state}`);
    const rest = await collect(stream);
    const last = rest.at(-1)?.payload;
    assert(last?.$case === 'statusUpdate' && last.value.status.state === TaskState.TASK_STATE_CANCELED,
      `last ${JSON.stringify(last)}`);
  });

  await check(`${label}: resubscribe re-attaches to a running task and ends with its cancel`, async () => {
    const started = await agent.sendMessage(request('slow two', returnImmediately()));
    assert(isTask(started), 'a task');
    const subscription = agent.resubscribeTask({ tenant: '', id: started.id });
    const snapshot = (await subscription.next()).value;
    assert(snapshot.payload.$case === 'task' && snapshot.payload.value.id === started.id, 'snapshot first');
    await agent.cancelTask({ tenant: '', id: started.id, metadata: undefined });
    const rest = await collect(subscription);
    const last = rest.at(-1)?.payload;
    assert(last?.$case === 'statusUpdate' && last.value.status.state === TaskState.TASK_STATE_CANCELED,
      `last ${JSON.stringify(last)}`);
  });

  await check(`${label}: a multi-turn exchange waits for input and continues on the same task`, async () => {
    const asked = await agent.sendMessage(request('ask me'));
    assert(asked.status.state === TaskState.TASK_STATE_INPUT_REQUIRED, `state ${asked.status.state}`);
    const answered = await agent.sendMessage(request('more', undefined, asked.id));
    assert(answered.id === asked.id, 'same task');
    assert(answered.status.state === TaskState.TASK_STATE_COMPLETED, `state ${answered.status.state}`);
    assert(artifactText(answered) === 'echo: ask me / more', `artifact ${artifactText(answered)}`);
  });

  await check(`${label}: push-config create, get, list and delete (twice)`, async () => {
    const config = { tenant: '', id: 'js-hook', taskId: done.id, url: 'https://example.com/hook', token: 't',
      authentication: undefined };
    const created = await agent.createTaskPushNotificationConfig(config);
    assert(created.url === config.url, `created ${JSON.stringify(created)}`);
    const fetched = await agent.getTaskPushNotificationConfig({ tenant: '', taskId: done.id, id: created.id });
    assert(fetched.url === config.url, `fetched ${JSON.stringify(fetched)}`);
    const listed = await agent.listTaskPushNotificationConfig({ tenant: '', taskId: done.id, pageSize: 0, pageToken: '' });
    assert(listed.configs.length >= 1, `listed ${listed.configs.length}`);
    for (let n = 0; n < 2; n += 1) {
      await agent.deleteTaskPushNotificationConfig({ tenant: '', taskId: done.id, id: created.id });
    }
  });

  await check(`${label}: an unknown task is the typed TaskNotFoundError`, async () => {
    try {
      await agent.getTask({ tenant: '', id: 'no-such-task', historyLength: undefined });
    } catch (error) {
      const found = error instanceof errors.TaskNotFoundError || error?.cause instanceof errors.TaskNotFoundError;
      assert(found, `got ${error?.constructor?.name}: ${error?.message}`);
      return error.constructor.name;
    }
    throw new Error('no error');
  });

  await check(`${label}: canceling a finished task is the typed TaskNotCancelableError`, async () => {
    try {
      await agent.cancelTask({ tenant: '', id: done.id, metadata: undefined });
    } catch (error) {
      assert(error instanceof errors.TaskNotCancelableError, `got ${error?.constructor?.name}: ${error?.message}`);
      return error.constructor.name;
    }
    throw new Error('no error');
  });
}

for (const version of ['1.0', '0.3']) {
  for (const binding of ['JSONRPC', 'HTTP+JSON']) {
    await suite(version, binding);
  }
}

console.log(`a2a-js-sdk ${sdkVersion}: ${passed} passed, ${failures.length} failed`);
process.exit(failures.length === 0 ? 0 : 1);
