/**
 * The trace view (gateway/insight/trace-view.ts) on a real gateway with scripted models: a waited sessions_send is one
 * trace whose target run hangs from the requester's execute_tool span; a spawn's child hangs from its spawn call, and
 * the parent's run that reads the completion from the completion's delivery; a caller's traceparent is a remote parent;
 * the routes resolve ids and name what they did not find.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import type { TraceAnswer, UsageAnswer, QueuesAnswer } from '../../src/http/answers.js';
import { ControlApi } from '../../src/http/control-api.js';
import { chatSpanId, spanIdOf } from '../../src/kit/trace-context.js';
import type { TraceSpanView } from '../../src/ports/answers.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

const TOKEN = 'control-token-for-the-trace-test';
let gateway: Gateway | undefined;
let api: ControlApi | undefined;
afterEach(async () => {
  await api?.close();
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
  api = undefined;
});

const CONFIG = `{
  tools: { agentToAgent: { enabled: true }, sessions: { visibility: "all" } },
  session: { agentToAgent: { maxPingPongTurns: 0 } },
  agents: { list: [
    { id: "asker", model: "scripted/asker", subagents: { allowAgents: ["helper"] } },
    { id: "helper", model: "scripted/helper" },
  ] },
  models: {
    prices: { "scripted/asker": { input: 2, output: 10 } },
    providers: { scripted: { type: "scripted", models: {
      asker: { rules: [
        { match: "sub-agent", reply: "the researcher is done" },
        { match: "ask", steps: [
          { toolCalls: [{ tool: "sessions_send", args: { agentId: "helper", message: "what is 2+2?", timeoutSeconds: 30 } }] },
          { text: "helper says {{tool.sessions_send.reply}}" },
        ] },
        { match: "delegate", steps: [
          { toolCalls: [{ tool: "sessions_spawn", args: { agentId: "helper", label: "research", task: "look it up" } }] },
          { text: "asked a researcher" },
        ] },
        { match: "slowly", delayMs: 60000, reply: "late" },
        { reply: "hello" },
      ] },
      helper: { rules: [{ reply: "four" }] },
    } } },
  },
}`;

async function start(): Promise<Gateway> {
  gateway = await startTestGateway(CONFIG);
  return gateway;
}

async function listen(gw: Gateway): Promise<string> {
  api = new ControlApi(gw, { host: '127.0.0.1', port: 0, token: TOKEN });
  return api.listen();
}

async function get<T>(url: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: T }> {
  const response = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${TOKEN}`, ...headers } });
  return { status: response.status, body: (await response.json()) as T };
}

async function askAndWait(gw: Gateway, message: string): Promise<{ inputId: string; runId: string }> {
  const sent = await gw.send({ target: 'asker', message });
  const result = await gw.waitForInput(sent.input.id, 10_000);
  if (result.status !== 'completed') throw new Error(`the run did not complete: ${result.status}`);
  return { inputId: sent.input.id, runId: result.run.id };
}

const only = (spans: TraceSpanView[], pick: (span: TraceSpanView) => boolean) => {
  const found = spans.filter(pick);
  expect(found).toHaveLength(1);
  return found[0]!;
};

describe('trace view', () => {
  it("a waited sessions_send is one trace: the target's run is a child of the requester's execute_tool span", async () => {
    const gw = await start();
    const { inputId, runId } = await askAndWait(gw, 'please ask the helper');
    const trace = await gw.traceView({ inputId });

    expect(trace.runs).toBe(2);
    expect(trace.clipped).toBe(false);
    const asker = only(trace.spans, (span) => span.kind === 'invoke_agent' && span.agentId === 'asker');
    const helper = only(trace.spans, (span) => span.kind === 'invoke_agent' && span.agentId === 'helper');
    expect(asker).toMatchObject({
      spanId: spanIdOf('run', runId),
      parentSpanId: null,
      depth: 0,
      name: 'invoke_agent asker',
      status: 'succeeded',
      runId,
    });
    expect(trace.focusSpanId).toBe(asker.spanId);

    // The ledger's place of the send is the tool span's: the helper's run hangs from it.
    const [sent] = (await gw.store.toolCalls.list({ runId })).filter((call) => call.tool === 'sessions_send');
    const send = only(trace.spans, (span) => span.name === 'execute_tool sessions_send');
    expect(send).toMatchObject({
      spanId: spanIdOf('tool', runId, sent!.step, sent!.index),
      parentSpanId: asker.spanId,
      depth: 1,
      status: 'ok',
    });
    expect(helper).toMatchObject({ parentSpanId: send.spanId, depth: 2, sessionKey: 'agent:helper:main', status: 'succeeded' });
    // Who waited on whom: the helper's run lies inside the asker's call, which lies inside the asker's run.
    expect(send.start).toBeLessThanOrEqual(helper.start);
    expect(helper.end!).toBeLessThanOrEqual(send.end!);
    expect(asker.start).toBeLessThanOrEqual(send.start);
    expect(send.end!).toBeLessThanOrEqual(asker.end!);
    // Tree order: each span comes after its parent.
    const place = new Map(trace.spans.map((span, index) => [span.spanId, index]));
    for (const [index, span] of trace.spans.entries()) if (span.parentSpanId) expect(place.get(span.parentSpanId)!).toBeLessThan(index);

    // A chat span per model call, with their tokens adding up to the run's, priced for the asker and not the helper.
    const askerChats = trace.spans.filter((span) => span.kind === 'chat' && span.runId === runId);
    expect(askerChats.map((span) => span.name)).toEqual(['chat asker', 'chat asker']);
    expect(askerChats.every((span) => span.parentSpanId === asker.spanId)).toBe(true);
    // The ids the exporter gives them: the run, its first attempt, the step.
    expect(askerChats.map((span) => span.spanId)).toEqual([chatSpanId(runId, 1, 0), chatSpanId(runId, 1, 1)]);
    const { run } = await gw.getRun(runId);
    expect(askerChats.reduce((sum, span) => sum + (span.inputTokens ?? 0), 0)).toBe(run.usage.inputTokens);
    expect(askerChats.reduce((sum, span) => sum + (span.outputTokens ?? 0), 0)).toBe(run.usage.outputTokens);
    const cost = (run.usage.inputTokens * 2 + run.usage.outputTokens * 10) / 1_000_000;
    expect(asker.cost).toBeCloseTo(cost, 6);
    expect(helper.cost).toBeNull();
    expect(trace.totals).toEqual({
      inputTokens: run.usage.inputTokens + helper.inputTokens!,
      outputTokens: run.usage.outputTokens + helper.outputTokens!,
      cost: null,
    });
    expect(trace.start).toBe(asker.start);
    expect(trace.end).toBe(asker.end);

    // The same trace from the helper's run, from its trace id, and for the helper's run id.
    expect((await gw.traceView({ runId: helper.runId! })).spans).toEqual(trace.spans);
    const byId = await gw.traceView({ traceId: trace.traceId });
    expect(byId.spans).toEqual(trace.spans);
    expect(byId.focusSpanId).toBeNull();
  });

  it("a spawn's child hangs from the spawn call, and the parent's run that reads the completion from its delivery", async () => {
    const gw = await start();
    const { runId } = await askAndWait(gw, 'delegate please');
    const [child] = await gw.listSubagents('agent:asker:main');
    const told = await waitUntil('the asker read the completion', async () => {
      const runs = await gw.listRuns({ sessionKey: 'agent:asker:main' });
      return runs.length === 2 && runs.every((listed) => listed.status === 'succeeded') && runs.find((listed) => listed.id !== runId);
    });
    const trace = await gw.traceView({ subagent: child!.subagentId });

    expect(trace.runs).toBe(3);
    const first = only(trace.spans, (span) => span.runId === runId && span.kind === 'invoke_agent');
    const spawn = only(trace.spans, (span) => span.name === 'execute_tool sessions_spawn');
    const childRun = only(trace.spans, (span) => span.kind === 'invoke_agent' && span.agentId === 'helper');
    const delivery = only(trace.spans, (span) => span.kind === 'deliver');
    const reader = only(trace.spans, (span) => span.runId === told.id && span.kind === 'invoke_agent');
    expect(first.parentSpanId).toBeNull();
    expect(spawn.parentSpanId).toBe(first.spanId);
    expect(childRun).toMatchObject({ parentSpanId: spawn.spanId, sessionKey: child!.childSessionKey });
    expect(trace.focusSpanId).toBe(childRun.spanId);
    expect(delivery).toMatchObject({ parentSpanId: childRun.spanId, status: 'delivered', agentId: 'helper' });
    expect(delivery.name.startsWith('deliver ')).toBe(true);
    expect(reader).toMatchObject({ parentSpanId: delivery.spanId, depth: delivery.depth + 1, status: 'succeeded' });
    // The row is written by the child's commit; the run it wakes may start before the attempt is marked delivered.
    expect(delivery.start).toBeGreaterThanOrEqual(childRun.start);
    expect(delivery.start).toBeLessThanOrEqual(reader.start);
    expect(delivery.end).not.toBeNull();
  });

  it("a caller's traceparent is the run's remote parent; the routes resolve ids and say what they did not find", async () => {
    const gw = await start();
    const url = await listen(gw);
    const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    const sent = await fetch(`${url}/v1/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', traceparent: `00-${callerTrace}-${callerSpan}-01` },
      body: JSON.stringify({ target: 'asker', message: 'hi there', wait: true, timeoutSeconds: 10 }),
    });
    const { inputId } = (await sent.json()) as { inputId: string };

    const { status, body } = await get<TraceAnswer>(url, `/v1/traces/${callerTrace}`);
    expect(status).toBe(200);
    expect(body.traceId).toBe(callerTrace);
    const remote = only(body.spans, (span) => span.kind === 'remote');
    expect(remote).toMatchObject({ spanId: callerSpan, parentSpanId: null, depth: 0, agentId: null });
    expect(only(body.spans, (span) => span.kind === 'invoke_agent')).toMatchObject({
      parentSpanId: callerSpan,
      depth: 1,
      agentId: 'asker',
    });

    // By a prefix of the input's id, as the other routes take ids.
    const byInput = await get<TraceAnswer>(url, `/v1/traces?input=${inputId.slice(0, 8)}`);
    expect(byInput.body.spans).toEqual(body.spans);

    const missing = await get<{ error: { code: string; message: string } }>(url, '/v1/traces?input=no-such-input');
    expect(missing.status).toBe(404);
    expect(missing.body.error.message).toContain('no input "no-such-input"');
    const nothing = await get<{ error: { code: string; message: string } }>(url, `/v1/traces/${'e'.repeat(32)}`);
    expect(nothing.status).toBe(404);
    expect(nothing.body.error.message).toContain(`no run in trace "${'e'.repeat(32)}"`);
    expect((await get(url, '/v1/traces/not-a-trace')).status).toBe(400);
    expect((await get(url, '/v1/traces')).status).toBe(400);
    expect((await get(url, '/v1/traces?run=a&input=b')).status).toBe(400);
    const task = await get<{ error: { code: string; message: string } }>(url, '/v1/traces?task=no-such-task');
    expect(task.status).toBe(404);
    expect(task.body.error.message).toContain('board task "no-such-task"');
  });

  it('the usage route slices tokens by time, and the queues route lists waiting sessions', async () => {
    const gw = await start();
    const url = await listen(gw);
    const { runId } = await askAndWait(gw, 'hello');
    const { run } = await gw.getRun(runId);
    const since = run.startedAt - 30_000;
    const { body } = await get<UsageAnswer>(url, `/v1/usage?since=${since}&bucket=60000`);
    expect(body.bucketMs).toBe(60_000);
    expect(body.slices).toEqual([
      {
        at: since,
        agentId: 'asker',
        model: 'scripted/asker',
        runs: 1,
        inputTokens: run.usage.inputTokens,
        outputTokens: run.usage.outputTokens,
        cachedInputTokens: 0,
        cost: (run.usage.inputTokens * 2 + run.usage.outputTokens * 10) / 1_000_000,
      },
    ]);
    expect((await get(url, `/v1/usage?since=${since}&bucket=10`)).status).toBe(400);
    expect((await get<UsageAnswer>(url, `/v1/usage?since=${since}`)).body.slices).toBeUndefined();

    expect((await get<QueuesAnswer>(url, '/v1/queues')).body.sessions).toEqual([]);
    // A message behind a run that goes on waits in its session's queue, from when it was accepted.
    const busy = 'agent:asker:api:direct:busy';
    await gw.send({ target: busy, message: 'answer slowly' });
    await waitUntil('the slow run started', async () => (await gw.listRuns({ sessionKey: busy })).length === 1);
    const queued = await gw.send({ target: busy, message: 'and then this' });
    const queues = await get<QueuesAnswer>(url, '/v1/queues');
    expect(queues.status).toBe(200);
    expect(queues.body.sessions).toEqual([{ sessionKey: busy, oldestQueuedAt: queued.input.createdAt }]);
    expect(queues.body.at).toBeGreaterThanOrEqual(queued.input.createdAt);
  });
});
