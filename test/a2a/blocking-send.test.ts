/**
 * A blocking SendMessage: its client reads only the final task, so the run does not stream and no
 * artifact chunks are published (or saved); a streaming or non-blocking call still gets them.
 */
import { Role, type Message } from '@a2a-js/sdk';
import type { AgentExecutionEvent, ExecutionEventBus, RequestContext, ServerCallContext } from '@a2a-js/sdk/server';
import { afterEach, expect, it } from 'vitest';
import { GatewayAgentExecutor, textPart } from '../../src/a2a/executor.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

it('a blocking call publishes no chunks; a call that is not blocking streams them', async () => {
  gateway = await startTestGateway(
    `{ agents: { list: [{ id: "talk", model: "scripted/talk" }] }, models: { providers: { scripted: { type: "scripted", models: { talk: { chunkChars: 4, rules: [{ reply: "a reply long enough for chunks" }] } } } } } }`,
  );
  const blockingCalls = new WeakSet<ServerCallContext>();
  const executor = new GatewayAgentExecutor(gateway, 'talk', gateway.store.a2aTasks, { now: () => Date.now() }, 60_000, blockingCalls);
  const execute = async (id: string, blocking: boolean) => {
    const events: AgentExecutionEvent[] = [];
    const bus = { publish: (event: AgentExecutionEvent) => events.push(event), finished: () => {} } as unknown as ExecutionEventBus;
    const call = {} as ServerCallContext;
    if (blocking) blockingCalls.add(call);
    const message: Message = {
      messageId: `m-${id}`,
      contextId: `c-${id}`,
      taskId: `t-${id}`,
      role: Role.ROLE_USER,
      parts: [textPart('hello')],
      metadata: {},
      extensions: [],
      referenceTaskIds: [],
    };
    await executor.execute(
      { taskId: `t-${id}`, contextId: `c-${id}`, userMessage: message, context: call, task: undefined } as unknown as RequestContext,
      bus,
    );
    const artifacts = events.flatMap((event) => (event.kind === 'artifactUpdate' ? [event.data] : []));
    return { chunks: artifacts.filter((event) => !event.lastChunk).length, answer: artifacts.at(-1)?.artifact?.parts[0].content?.value };
  };
  expect(await execute('1', true)).toEqual({ chunks: 0, answer: 'a reply long enough for chunks' });
  const streamed = await execute('2', false);
  expect(streamed.answer).toBe('a reply long enough for chunks');
  expect(streamed.chunks).toBeGreaterThan(3);
});
