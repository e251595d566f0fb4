/**
 * The hop budget on the board: agents that hand each other tasks (each creating a task for the other while working on
 * its own) stop at session.agentToAgent.maxHops; the task past it is blocked with the reason, and loop.stopped is
 * journalled.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { BoardService } from '../../src/board/board.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

const MAX_HOPS = 3;

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

/** Each agent, given a task, puts one on the board for the other and completes its own. */
const CONFIG = `{
  board: { sweepIntervalMs: 50, agents: ["ping", "pong"] },
  tools: { agentToAgent: { enabled: true } },
  session: { agentToAgent: { maxHops: ${MAX_HOPS} } },
  agents: { list: [{ id: "ping", model: "scripted/ping" }, { id: "pong", model: "scripted/pong" }] },
  models: { providers: { scripted: { type: "scripted", models: {
    ping: { rules: [{ steps: [
      { toolCalls: [{ tool: "board_create", args: { title: "over to pong", assignee: "pong" } }] },
      { toolCalls: [{ tool: "board_complete", args: { result: "handed on" } }] },
      { text: "done" },
    ] }] },
    pong: { rules: [{ steps: [
      { toolCalls: [{ tool: "board_create", args: { title: "over to ping", assignee: "ping" } }] },
      { toolCalls: [{ tool: "board_complete", args: { result: "handed on" } }] },
      { text: "done" },
    ] }] },
  } } } },
}`;

describe('hop budget on the board', () => {
  it('agents handing each other tasks stop at maxHops: the task past it is blocked with the reason, and journalled', async () => {
    let board!: BoardService;
    gateway = await startTestGateway(CONFIG, {}, undefined, { onBoard: (made) => (board = made) });
    const user = { kind: 'user' as const, name: 'user' };
    await board.create({ title: 'start', assignee: 'ping' }, user);
    const blocked = await waitUntil(
      'a task blocked past the budget',
      async () => (await board.list({ states: ['blocked'] }, user)).find((task) => task.blockReason?.includes('maxHops')),
      20_000,
    );
    expect(blocked.blockReason).toContain(`this board message would be hop ${MAX_HOPS + 1}`);
    // start (hop 0) and one task per hop up to the budget are done (the last may complete after its task was blocked);
    // the one past it is blocked, and nothing follows it.
    const tasks = await waitUntil('the tasks up to the budget done', async () => {
      const all = await board.list({ limit: 100 }, user);
      return all.filter((task) => task.state === 'done').length === MAX_HOPS + 1 ? all : undefined;
    });
    expect(tasks).toHaveLength(MAX_HOPS + 2);
    const events = await gateway.store.events.list({ limit: 1000 });
    expect(events.find((event) => event.type === 'loop.stopped')?.payload).toMatchObject({
      channel: 'board',
      hop: MAX_HOPS + 1,
      maxHops: MAX_HOPS,
    });
  });

  it("a task an agent creates from any session, not only a board one, is one hop further in that run's conversation", async () => {
    let board!: BoardService;
    gateway = await startTestGateway(CONFIG, {}, undefined, { onBoard: (made) => (board = made) });
    const user = { kind: 'user' as const, name: 'user' };
    // ping's main session gets a message at the last hop the budget allows (as from another agent's sessions_send):
    // the task its run creates for pong is past the budget, and pong never runs it.
    const sent = await gateway.send({
      target: 'ping',
      message: 'pass it on',
      provenance: { kind: 'inter_session', sourceAgent: 'pong', conversationId: 'c-9', hop: MAX_HOPS },
    });
    await gateway.waitForInput(sent.input.id, 15_000);
    const [task] = await board.list({ limit: 10 }, user);
    expect(task.conversation).toEqual({ id: 'c-9', hop: MAX_HOPS + 1 });
    const blocked = await waitUntil('the task blocked', async () => {
      const current = await board.list({ states: ['blocked'] }, user);
      return current.find((candidate) => candidate.id === task.id);
    });
    expect(blocked.blockReason).toContain(`hop ${MAX_HOPS + 1} of conversation c-9`);
    expect(await gateway.store.runs.list({ sessionKey: `agent:pong:board:${task.id}`, limit: 10 })).toEqual([]);
  });
});
