/**
 * One trace per collaboration (docs/observability.md): a waited sessions_send, its reply, two ping-pong turns and the
 * announce are one trace whose spans form the documented tree, named and attributed by the OpenTelemetry GenAI
 * conventions; a spawned sub-agent's run and the run its completion wakes are in the spawning run's trace.
 */
import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { startGateway } from '../../src/app.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { openTelemetry, type Telemetry } from '../../src/telemetry/telemetry.js';
import { spanIdOf, traceIdOf } from '../../src/kit/trace-context.js';
import { OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway | undefined;
let telemetry: Telemetry | undefined;
let receiver: OtlpReceiver | undefined;

afterEach(async () => {
  await gateway?.stop();
  await gateway?.store.close();
  await telemetry?.shutdown();
  await receiver?.close();
  gateway = telemetry = receiver = undefined;
});

async function start(configText: string): Promise<{ gateway: Gateway; telemetry: Telemetry; receiver: OtlpReceiver }> {
  receiver = await OtlpReceiver.start();
  const text = configText.replace('TELEMETRY', `telemetry: { traces: { endpoint: "${receiver.url}", exportIntervalMs: 20 } },`);
  const { config } = parseConfigText(text, '/test/switchboard.json5', {});
  telemetry = await openTelemetry(config.telemetry, { gatewayId: 'gw-test', warn: () => {} });
  const store = await SqliteStore.open({ path: ':memory:' });
  gateway = await startGateway({ config, store, gatewayId: 'gw-test', tracing: telemetry.tracing });
  return { gateway, telemetry, receiver };
}

const named = (spans: ReceivedSpan[], prefix: string) => spans.filter((span) => span.name.startsWith(prefix));

describe('a waited sessions_send with two ping-pong turns and an announce', () => {
  const config = `{
    TELEMETRY
    agents: { list: [
      { id: "support", model: "scripted/support" },
      { id: "expert", model: "scripted/expert" },
    ] },
    bindings: [{ agentId: "support", match: { channel: "whatsapp" } }],
    tools: { agentToAgent: { enabled: true, allow: ["support", "expert"] }, sessions: { visibility: "all" } },
    session: { agentToAgent: { maxPingPongTurns: 2 } },
    models: { providers: { scripted: { type: "scripted", models: {
      support: { rules: [
        { match: "agent-to-agent turn 1 of", reply: "Does that hold for version 2?" },
        { match: "technical problem: (.*)", steps: [
          { toolCalls: [{ tool: "sessions_send", args: { sessionKey: "agent:expert:whatsapp:group:tech", message: "A user reports: {{match.1}}", timeoutSeconds: 30 } }] },
          { text: "Our expert says: {{tool.sessions_send.reply}}" },
        ] },
      ] },
      expert: { rules: [
        { match: "announce step", reply: "Resolved with support." },
        { match: "agent-to-agent turn 2 of", reply: "Yes, version 2 included." },
        { match: "A user reports", reply: "Clear the cache." },
        { reply: "noted" },
      ] },
    } } } },
  }`;

  it('is one trace: the send, the reply, the turns and the announce hang from the first run', async () => {
    const { gateway, receiver } = await start(config);
    // The group has a channel to announce to.
    const hello = await gateway.send({ target: 'expert', message: 'hello', inbound: { channel: 'whatsapp', group: 'tech' } });
    await gateway.waitForInput(hello.input.id, 5000);
    const asked = await gateway.send({ message: 'technical problem: the app crashes', inbound: { channel: 'whatsapp', peer: 'alice' } });
    expect(await gateway.waitForInput(asked.input.id, 10_000)).toMatchObject({ status: 'completed' });

    const traceId = traceIdOf(asked.input.id);
    const runsOf = () => receiver.spans.filter((span) => span.traceId === traceId && span.name.startsWith('invoke_agent'));
    // The first run, the request, two turns and the announce: five runs, each exported when it commits.
    await waitUntil('five runs in the trace', () => runsOf().length >= 5, 10_000, 20);
    const trace = receiver.spans.filter((span) => span.traceId === traceId);

    // The tree: the first run is the root; every other span's parent is a span of the same trace.
    const root = trace.find((span) => span.parentSpanId === '');
    expect(root?.name).toBe('invoke_agent support');
    expect(root?.spanId).toBe(spanIdOf('run', (await gateway.inputRunId(asked.input.id))!));
    const ids = new Set(trace.map((span) => span.spanId));
    expect(trace.filter((span) => span !== root && !ids.has(span.parentSpanId))).toEqual([]);
    expect(receiver.descendants(root!.spanId)).toHaveLength(trace.length);

    // The send is a tool call of the first run; the request's run is its child.
    const send = named(trace, 'execute_tool sessions_send');
    expect(send).toHaveLength(1);
    expect(send[0].parentSpanId).toBe(root!.spanId);
    expect(send[0].attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'sessions_send',
      'gen_ai.tool.type': 'function',
      'switchboard.step': 0,
      'switchboard.call.index': 0,
    });
    const runs = named(trace, 'invoke_agent');
    const steps = runs.map((run) => [run.name, run.attributes['switchboard.exchange.step'] ?? null]);
    expect(steps).toEqual(
      expect.arrayContaining([
        ['invoke_agent support', null],
        ['invoke_agent expert', 'request'],
        ['invoke_agent support', 'turn'],
        ['invoke_agent expert', 'turn'],
        ['invoke_agent expert', 'announce'],
      ]),
    );
    const request = runs.find((run) => run.attributes['switchboard.exchange.step'] === 'request')!;
    expect(request.parentSpanId).toBe(send[0].spanId);
    // The turns and the announce come through the outbox: each run's parent is a delivery.
    for (const later of runs.filter((run) => ['turn', 'announce'].includes(String(run.attributes['switchboard.exchange.step'])))) {
      const parent = trace.find((span) => span.spanId === later.parentSpanId)!;
      expect(parent.name).toMatch(/^deliver /);
      expect(parent.attributes['switchboard.outbox.kind']).toBeTypeOf('string');
    }

    // GenAI attribute names on the runs and the model calls.
    expect(root!.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.id': 'support',
      'gen_ai.agent.name': 'support',
      'gen_ai.conversation.id': asked.sessionKey,
      'switchboard.run.status': 'succeeded',
      'switchboard.input.ids': asked.input.id,
    });
    const chats = named(trace, 'chat ');
    expect(chats.length).toBeGreaterThanOrEqual(6);
    for (const chat of chats) {
      expect(chat.attributes['gen_ai.operation.name']).toBe('chat');
      expect(chat.attributes['gen_ai.provider.name']).toBe('scripted');
      expect(typeof chat.attributes['gen_ai.request.model']).toBe('string');
      expect(typeof chat.attributes['gen_ai.usage.input_tokens']).toBe('number');
      expect(typeof chat.attributes['gen_ai.usage.output_tokens']).toBe('number');
      expect(runs.map((run) => run.spanId)).toContain(chat.parentSpanId);
    }
    // Contents are off by default.
    expect(trace.filter((span) => 'gen_ai.input.messages' in span.attributes)).toEqual([]);

    // The console's trace view, drawn from the store, names the same spans by the same ids.
    const view = await gateway.traceView({ traceId });
    const exported = (kind: string) => trace.filter((span) => span.attributes['gen_ai.operation.name'] === kind).map((span) => span.spanId);
    const drawn = (kind: string) => view.spans.filter((span) => span.kind === kind).map((span) => span.spanId);
    for (const kind of ['invoke_agent', 'chat', 'execute_tool']) expect(new Set(drawn(kind))).toEqual(new Set(exported(kind)));
  });
});

describe('a spawned sub-agent', () => {
  const config = `{
    TELEMETRY
    agents: { list: [
      { id: "lead", model: "scripted/lead", subagents: { allowAgents: ["helper"] } },
      { id: "helper", model: "scripted/helper" },
    ] },
    models: { providers: { scripted: { type: "scripted", models: {
      lead: { rules: [
        { match: "completion|finished|result", reply: "lead read the result" },
        { match: "delegate", steps: [
          { toolCalls: [{ tool: "sessions_spawn", args: { task: "count to three", agentId: "helper" } }] },
          { text: "spawned" },
        ] },
      ] },
      helper: { rules: [{ reply: "one two three" }] },
    } } } },
  }`;

  it('runs in the spawning run trace, and the run its completion wakes joins it', async () => {
    const { gateway, receiver } = await start(config);
    const sent = await gateway.send({ target: 'lead', message: 'delegate' });
    expect(await gateway.waitForInput(sent.input.id, 10_000)).toMatchObject({ status: 'completed' });
    const traceId = traceIdOf(sent.input.id);
    const runsOf = () => receiver.spans.filter((span) => span.traceId === traceId && span.name.startsWith('invoke_agent'));
    // The lead's run, the helper's, and the lead's run that reads the completion.
    await waitUntil('three runs in the trace', () => runsOf().length >= 3, 10_000, 20);
    const trace = receiver.spans.filter((span) => span.traceId === traceId);
    const spawn = named(trace, 'execute_tool sessions_spawn')[0]!;
    const helper = runsOf().find((run) => run.name === 'invoke_agent helper')!;
    expect(helper.parentSpanId).toBe(spawn.spanId);
    const woken = runsOf().filter((run) => run.name === 'invoke_agent lead' && run.parentSpanId !== '');
    expect(woken).toHaveLength(1);
    // The completion reached the lead through the outbox, from the helper's run.
    const delivery = trace.find((span) => span.spanId === woken[0].parentSpanId)!;
    expect(delivery.name).toMatch(/^deliver /);
    expect(delivery.parentSpanId).toBe(helper.spanId);
  });
});

describe('what a span carries, and which traces are recorded', () => {
  /** A gateway whose traces take `traces` beside the endpoint, and whose telemetry section takes `telemetry`. */
  async function startWith(traces: string, telemetrySection = '') {
    receiver = await OtlpReceiver.start();
    const { config } = parseConfigText(
      `{
        telemetry: { traces: { endpoint: "${receiver.url}", exportIntervalMs: 20, ${traces} }, ${telemetrySection} },
        agents: { list: [{ id: "echo", model: "scripted/echo" }] },
        models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [
          { match: "time", steps: [{ toolCalls: [{ tool: "time_now", args: {} }] }, { text: "it is late" }] },
          { reply: "echo {{input}}" },
        ] } } } } },
      }`,
      '/test/switchboard.json5',
      {},
    );
    telemetry = await openTelemetry(config.telemetry, { gatewayId: 'gw-test', warn: () => {} });
    gateway = await startGateway({
      config,
      store: await SqliteStore.open({ path: ':memory:' }),
      gatewayId: 'gw-test',
      tracing: telemetry.tracing,
    });
    return { gateway, receiver };
  }

  it('with captureContent, the prompts, answers, tool arguments and results', async () => {
    const { gateway, receiver } = await startWith('', 'captureContent: true');
    const sent = await gateway.send({ target: 'echo', message: 'what time is it' });
    await gateway.waitForInput(sent.input.id, 5000);
    await waitUntil('the run span', () => receiver.spans.some((span) => span.name === 'invoke_agent echo'), 10_000, 20);
    const [run] = named(receiver.spans, 'invoke_agent');
    expect(JSON.parse(String(run.attributes['gen_ai.input.messages']))).toEqual(['what time is it']);
    expect(JSON.parse(String(run.attributes['gen_ai.output.messages']))).toEqual(['it is late']);
    const chats = named(receiver.spans, 'chat ');
    expect(chats).toHaveLength(2);
    expect(chats.every((chat) => String(chat.attributes['gen_ai.input.messages']).includes('what time is it'))).toBe(true);
    expect(chats.map((chat) => JSON.parse(String(chat.attributes['gen_ai.output.messages']))[0].text).sort()).toEqual(['', 'it is late']);
    const [tool] = named(receiver.spans, 'execute_tool time_now');
    expect(tool.attributes['gen_ai.tool.call.arguments']).toBe('{}');
    expect(typeof tool.attributes['gen_ai.tool.call.result']).toBe('string');
  });

  it("follows a caller's decision: an unsampled sender is not recorded, a sampled one is even at sampling 0", async () => {
    const { gateway, receiver } = await startWith('sampling: 0');
    const caller = (flag: string) => `00-${flag.repeat(32)}-${'c'.repeat(16)}-${flag === 'a' ? '01' : '00'}`;
    for (const flag of ['a', 'b']) {
      const sent = await gateway.send({ target: 'echo', message: `from ${flag}`, provenance: { kind: 'user', trace: caller(flag) } });
      expect(await gateway.waitForInput(sent.input.id, 5000)).toMatchObject({ status: 'completed' });
    }
    await telemetry!.shutdown();
    expect(new Set(receiver.spans.map((span) => span.traceId))).toEqual(new Set(['a'.repeat(32)]));
    expect(receiver.spans.find((span) => span.name === 'invoke_agent echo')?.parentSpanId).toBe('c'.repeat(16));
  });

  it('with sampling 0, records nothing; the runs are as ever', async () => {
    const { gateway, receiver } = await startWith('sampling: 0');
    const sent = await gateway.send({ target: 'echo', message: 'hello' });
    expect(await gateway.waitForInput(sent.input.id, 5000)).toMatchObject({ status: 'completed', reply: 'echo hello' });
    await telemetry!.shutdown();
    expect(receiver.spans).toEqual([]);
  });
});

describe('a board task', () => {
  const config = `{
    TELEMETRY
    board: { sweepIntervalMs: 50, agents: ["lead", "worker"] },
    tools: { agentToAgent: { enabled: true } },
    agents: { list: [{ id: "lead", model: "scripted/lead" }, { id: "worker", model: "scripted/worker" }] },
    models: { providers: { scripted: { type: "scripted", models: {
      lead: { rules: [{ match: "plan", steps: [
        { toolCalls: [{ tool: "board_create", args: { title: "write the report", assignee: "worker" } }] },
        { text: "planned" },
      ] }] },
      worker: { rules: [{ steps: [
        { toolCalls: [{ tool: "board_complete", args: { result: "report written" } }] },
        { text: "done" },
      ] }] },
    } } } },
  }`;

  it("created by an agent's tool call: its attempt's run joins the creator's trace", async () => {
    const { gateway, receiver } = await start(config);
    const sent = await gateway.send({ target: 'lead', message: 'plan' });
    expect(await gateway.waitForInput(sent.input.id, 10_000)).toMatchObject({ status: 'completed' });
    const traceId = traceIdOf(sent.input.id);
    const worker = await waitUntil(
      "the worker's run",
      () => receiver.spans.find((span) => span.traceId === traceId && span.name === 'invoke_agent worker'),
      10_000,
      20,
    );
    const create = receiver.spans.find((span) => span.name === 'execute_tool board_create')!;
    expect(create.traceId).toBe(traceId);
    expect(worker.parentSpanId).toBe(create.spanId);
    expect(worker.attributes['switchboard.input.kind']).toBe('board');
  });
});

describe('a mailbox message and its answer', () => {
  it('are one trace: the reader joins through the file, and the answer comes back the same way', async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'sb-trace-mailbox-')));
    const config = `{
      TELEMETRY
      tools: { agentToAgent: { enabled: true } },
      mailbox: { enabled: true, dir: "${root}/mailbox", scanIntervalMs: 50, partialGraceMs: 200 },
      agents: { list: [
        { id: "ops", model: "scripted/ops", workspace: "${root}", mailbox: { name: "Ops" } },
        { id: "dev", model: "scripted/dev", workspace: "${root}" },
      ] },
      models: { providers: { scripted: { type: "scripted", models: {
        ops: { rules: [
          { match: "got:", reply: "thanks" },
          { match: "ask dev", steps: [{ toolCalls: [{ tool: "mailbox_send", args: { to: "dev", text: "is the build green?" } }] }, { text: "asked" }] },
        ] },
        dev: { rules: [{ reply: "got: {{input}}" }] },
      } } } },
    }`;
    const { gateway, receiver } = await start(config);
    const sent = await gateway.send({ target: 'ops', message: 'ask dev' });
    expect(await gateway.waitForInput(sent.input.id, 10_000)).toMatchObject({ status: 'completed' });
    const traceId = traceIdOf(sent.input.id);
    const runs = () => receiver.spans.filter((span) => span.traceId === traceId && span.name.startsWith('invoke_agent'));
    // The ops run that asked, dev's run that answered, and the ops run that read the answer.
    await waitUntil('three runs in the trace', () => runs().length >= 3, 15_000, 20);
    const byId = new Map(receiver.spans.map((span) => [span.spanId, span]));
    const send = receiver.spans.find((span) => span.name === 'execute_tool mailbox_send')!;
    const dev = runs().find((run) => run.name === 'invoke_agent dev')!;
    const written = byId.get(dev.parentSpanId)!;
    expect(written.name).toMatch(/^deliver /);
    expect(written.parentSpanId).toBe(send.spanId);
    const answerRead = runs().find((run) => run.name === 'invoke_agent ops' && run.parentSpanId !== '')!;
    const answer = byId.get(answerRead.parentSpanId)!;
    expect(answer.name).toMatch(/^deliver /);
    expect(answer.parentSpanId).toBe(dev.spanId);
  });
});
