/**
 * An agent's board task across a SIGKILL of the gateway mid-run: the claim survives, the restarted gateway's
 * dispatcher renews and follows it again (its heartbeats keep a 1-second claim alive through a 2.5-second
 * run), recovery runs the task's input again, and the task is completed once, in its first attempt. A run
 * that the crash cut short is not counted as a failed attempt.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { BoardTaskRecord, BoardTaskView } from '../../src/ports/index.js';
import type { RunRecord } from '../../src/ports/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startGatewayProcess, stopGatewayProcess, tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const { dir, configPath } = tempConfig(`{
  board: { sweepIntervalMs: 100, agentClaimTtlSeconds: 1 },
  agents: { list: [{ id: "slow", model: "scripted/slow" }, { id: "commenter", model: "scripted/commenter" }] },
  models: { providers: { scripted: { type: "scripted", models: {
    slow: { rules: [{ delayMs: 2500, steps: [{ toolCalls: [{ tool: "board_complete", args: { result: "finished" } }] }, { text: "done" }] }] },
    commenter: { rules: [{ delayMs: 1200, steps: [
      { toolCalls: [{ tool: "board_comment", args: { body: "starting on it" } }] },
      { toolCalls: [{ tool: "board_complete", args: { result: "finished" } }] },
      { text: "done" },
    ] }] },
  } } } },
}`);

describe('board: an agent worker across a gateway crash', () => {
  it('SIGKILL during the run: the task is followed again after the restart and completed once, in its first attempt', async () => {
    let gw = await startGatewayProcess(configPath);
    const { body } = await gw.request<{ task: BoardTaskRecord }>('POST', '/v1/board/tasks', { title: 'survive a crash', assignee: 'slow' });
    const sessionKey = `agent:slow:board:${body.task.id}`;
    await waitUntil(
      'the run started',
      async () =>
        (await gw.request<{ runs: RunRecord[] }>('GET', `/v1/runs?sessionKey=${encodeURIComponent(sessionKey)}`)).body.runs.length > 0,
      5000,
      20,
    );
    // A run's start is an internal write, committed with the next durable one: killed a moment later, the 2.5 s run is still running.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await stopGatewayProcess(gw, 'SIGKILL');
    gw = await startGatewayProcess(configPath);
    const done = await waitUntil(
      'the task is done',
      async () => {
        const view = (await gw.request<BoardTaskView>('GET', `/v1/board/tasks/${body.task.id}`)).body;
        return view.task.state === 'done' ? view : null;
      },
      15_000,
      50,
    );
    expect(done.task).toMatchObject({ result: 'finished', attempts: 1, failures: 0 });
    expect(done.attempts.map((attempt) => [attempt.worker, attempt.outcome])).toEqual([['agent:slow', 'completed']]);
    // The task is done as soon as board_complete commits; its run ends a step later.
    const runs = await waitUntil(
      'the second run ended',
      async () => {
        const listed = (await gw.request<{ runs: RunRecord[] }>('GET', `/v1/runs?sessionKey=${encodeURIComponent(sessionKey)}`)).body.runs;
        return listed.every((run) => run.status !== 'running') ? listed : null;
      },
      5000,
      20,
    );
    expect(runs.map((run) => run.status).sort()).toEqual(['interrupted', 'succeeded']);
    expect(await stopGatewayProcess(gw)).toBe(0);
    const store = await SqliteStore.open({ path: join(dir, '.switchboard', 'switchboard.db') });
    try {
      // One input for the one attempt, consumed once by the run that succeeded.
      const inputs = await store.inputs.list({ sessionKey });
      expect(inputs.map((input) => [input.idempotencyKey, input.status])).toEqual([[`board:${body.task.id}:1`, 'consumed']]);
    } finally {
      await store.close();
    }
  }, 60_000);

  it('SIGKILL after a board_comment: the rerun of the run writes no second comment, and the task is completed once', async () => {
    let gw = await startGatewayProcess(configPath);
    const { body } = await gw.request<{ task: BoardTaskRecord }>('POST', '/v1/board/tasks', {
      title: 'comment, then crash',
      assignee: 'commenter',
    });
    const view = async () => (await gw.request<BoardTaskView>('GET', `/v1/board/tasks/${body.task.id}`)).body;
    await waitUntil('the comment is written', async () => (await view()).comments.length > 0, 10_000, 20);
    await stopGatewayProcess(gw, 'SIGKILL');
    gw = await startGatewayProcess(configPath);
    const done = await waitUntil('the task is done', async () => ((await view()).task.state === 'done' ? view() : null), 15_000, 50);
    expect(done.comments.map((comment) => `${comment.author}: ${comment.body}`)).toEqual(['agent:commenter: starting on it']);
    expect(done.task).toMatchObject({ result: 'finished', attempts: 1 });
    expect(await stopGatewayProcess(gw)).toBe(0);
  }, 60_000);
});
