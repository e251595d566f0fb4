/**
 * Traces across processes (docs/observability.md): a run SIGKILLed after a committed step resumes in the same trace,
 * under the same run span; two gateways talking A2A share one trace id (W3C traceparent on the request); and a
 * collector that is down costs spans, counted, never a run.
 */
import { existsSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { spanIdOf } from '../../src/kit/trace-context.js';
import { OtlpReceiver } from '../helpers/otlp-receiver.js';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';
import type { RunRecord } from '../../src/ports/index.js';

let receiver: OtlpReceiver;
const gateways: GatewayProcess[] = [];

beforeAll(async () => {
  receiver = await OtlpReceiver.start();
});
afterEach(async () => {
  for (const gw of gateways.splice(0)) await stopGatewayProcess(gw, 'SIGKILL');
});
afterAll(() => receiver.close());

async function start(configPath: string): Promise<GatewayProcess> {
  const gw = await startGatewayProcess(configPath);
  gateways.push(gw);
  return gw;
}

const traces = (serviceName: string, extra = '') =>
  `telemetry: { serviceName: "${serviceName}", traces: { endpoint: "${receiver?.url}", exportIntervalMs: 20 ${extra} } },`;

describe('a run SIGKILLed after a committed step', () => {
  it('resumes in the same trace: the spans sent before the kill and after it hang from one run span', async () => {
    const { dir, configPath } = tempConfig('{}');
    const workspace = realpathSync(dir);
    writeFileSync(
      configPath,
      `{
        ${traces('resume')}
        agents: { list: [{ id: "worker", model: "scripted/w", workspace: ${JSON.stringify(workspace)}, exec: { enabled: true } }] },
        models: { providers: { scripted: { type: "scripted", models: { w: { rules: [
          { match: "work", steps: [
            { toolCalls: [{ tool: "exec", args: { command: "sh", args: ["-c", "test -f go || sleep 60; echo ran"] } }] },
            { text: "done: {{tool.exec.status}}" },
          ] },
        ] } } } } },
      }`,
    );
    let gw = await start(configPath);
    const sent = await gw.request<{ input: { id: string } }>('POST', '/v1/send', {
      target: 'worker',
      message: 'work',
      idempotencyKey: 'w1',
    });
    expect(sent.status).toBe(200);
    // Step 0 (the model's exec call) is committed and its chat span sent; the exec sleeps.
    const before = await waitUntil(
      'the first step chat span',
      () => receiver.spans.find((span) => span.service === 'resume' && span.name.startsWith('chat ')),
      20_000,
      20,
    );
    expect(receiver.spans.filter((span) => span.service === 'resume' && span.name.startsWith('invoke_agent'))).toEqual([]);
    await stopGatewayProcess(gw, 'SIGKILL');
    gateways.splice(gateways.indexOf(gw), 1);
    writeFileSync(join(workspace, 'go'), '');
    expect(existsSync(join(workspace, 'go'))).toBe(true);
    gw = await start(configPath);
    const runId = before.attributes['switchboard.run.id'] as string;
    await waitUntil(
      'the resumed run succeeded',
      async () => (await gw.request<{ run: RunRecord }>('GET', `/v1/runs/${runId}`)).body.run?.status === 'succeeded',
      30_000,
      20,
    );
    const run = await waitUntil(
      'the run span',
      () => receiver.spans.find((span) => span.service === 'resume' && span.name === 'invoke_agent worker'),
      20_000,
      20,
    );
    // One trace, one run span: the chat span sent before the kill is its child, as is everything the resumed run did.
    expect(run.spanId).toBe(spanIdOf('run', runId));
    expect(before.parentSpanId).toBe(run.spanId);
    expect(before.traceId).toBe(run.traceId);
    expect(run.attributes['switchboard.run.attempt']).toBe(2);
    const after = receiver.spans.filter((span) => span.service === 'resume' && span !== before && span !== run);
    expect(after.map((span) => span.name).sort()).toEqual(['chat w', 'execute_tool exec']);
    for (const span of after) {
      expect(span.traceId).toBe(run.traceId);
      expect(span.parentSpanId).toBe(run.spanId);
    }
    // The run span covers the whole run, from its first start.
    expect(run.startMs).toBeLessThanOrEqual(before.startMs);
  }, 90_000);
});

describe('two gateways talking A2A', () => {
  it('share one trace: the remote run is a child of the a2a_send call that reached it', async () => {
    const remote = tempConfig(`{
      ${traces('remote')}
      a2a: { server: { enabled: true, requireAuth: false } },
      agents: { list: [{ id: "expert", model: "scripted/e" }] },
      models: { providers: { scripted: { type: "scripted", models: { e: { rules: [{ reply: "the expert says hi" }] } } } } },
    }`);
    const b = await start(remote.configPath);
    const local = tempConfig(`{
      ${traces('local')}
      tools: { agentToAgent: { enabled: true, allow: ["caller", "expert"] } },
      a2a: { remoteAgents: [{ id: "expert", url: "${b.url}/a2a/expert" }] },
      agents: { list: [{ id: "caller", model: "scripted/c" }] },
      models: { providers: { scripted: { type: "scripted", models: { c: { rules: [
        { match: "ask", steps: [{ toolCalls: [{ tool: "a2a_send", args: { agentId: "expert", message: "hello expert", timeoutSeconds: 30 } }] }, { text: "answer: {{tool.a2a_send.text}}" }] },
      ] } } } } },
    }`);
    const a = await start(local.configPath);
    const sent = await a.request<{ input: { id: string } }>('POST', '/v1/send', { target: 'caller', message: 'ask', idempotencyKey: 'a1' });
    expect(sent.status).toBe(200);
    const remoteRun = await waitUntil(
      'the remote run span',
      () => receiver.spans.find((span) => span.service === 'remote' && span.name === 'invoke_agent expert'),
      30_000,
      20,
    );
    const localRun = await waitUntil(
      'the local run span',
      () => receiver.spans.find((span) => span.service === 'local' && span.name === 'invoke_agent caller'),
      30_000,
      20,
    );
    const call = receiver.spans.find((span) => span.service === 'local' && span.name === 'execute_tool a2a_send')!;
    expect(remoteRun.traceId).toBe(localRun.traceId);
    expect(call.parentSpanId).toBe(localRun.spanId);
    expect(remoteRun.parentSpanId).toBe(call.spanId);
    expect(remoteRun.attributes['gen_ai.agent.id']).toBe('expert');
    expect(localRun.attributes['switchboard.run.status']).toBe('succeeded');
  }, 90_000);
});
