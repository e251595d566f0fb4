/**
 * The board under crashes: 8 outside worker processes drain 1,000 tasks with dependencies through a real
 * gateway while one worker is SIGKILLed at random moments (and started again) and the gateway is SIGKILLed
 * twice. Every task must end done exactly once (one completed attempt, under the token that completed it)
 * or blocked with gave_up; no task starts before what it depends on is done; attempts add up.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { BoardTaskRecord } from '../../src/ports/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { ROOT, startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';

const TASKS = 1000;
const WORKERS = 8;
const { dir, configPath } = tempConfig(`{
  board: { sweepIntervalMs: 200 },
  agents: { list: [{ id: "idle", model: "scripted/idle" }] },
  models: { providers: { scripted: { type: "scripted", models: { idle: { rules: [{ reply: "ok" }] } } } } },
}`);
const dataDir = join(dir, '.switchboard');
const logFile = join(dir, 'completes.log');
const doneFile = join(dir, 'all-done');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A small seeded generator, so a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed;
  return () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

function startWorker(index: number): ChildProcess {
  return spawn(process.execPath, [join(ROOT, 'test/helpers/board-worker.mjs'), dataDir, `worker-${index}`, logFile, doneFile], {
    stdio: 'ignore',
  });
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

describe('board crash test', () => {
  it('8 workers drain 1,000 tasks with dependencies while a worker and the gateway are SIGKILLed: each task done once or gave up', async () => {
    const rand = random(Number(process.env.BOARD_CRASH_SEED ?? 7));
    let gw: GatewayProcess = await startGatewayProcess(configPath);
    const ids: string[] = [];
    const dependencies = new Map<string, string[]>();
    for (let i = 0; i < TASKS; i++) {
      const dependsOn =
        i < 10 ? [] : [...new Set([ids[i - 1 - Math.floor(rand() * 10)], ...(rand() < 0.3 ? [ids[Math.floor(rand() * i)]] : [])])];
      const created = await gw.request<{ task: BoardTaskRecord }>('POST', '/v1/board/tasks', {
        title: `task ${i}`,
        dependsOn,
        idempotencyKey: `crash-${i}`,
        maxAttempts: 5,
      });
      expect(created.status).toBe(200);
      ids.push(created.body.task.id);
      dependencies.set(created.body.task.id, dependsOn);
    }

    const workers = Array.from({ length: WORKERS }, (_, index) => startWorker(index));
    const settled = async () => {
      const { body } = await gw.request<{ tasks: BoardTaskRecord[] }>('GET', '/v1/board/tasks?state=ready,running&limit=10000');
      return body.tasks.length === 0;
    };
    let gatewayKills = 0;
    let workerKills = 0;
    const deadline = Date.now() + 150_000;
    while (Date.now() < deadline) {
      await sleep(150 + rand() * 400);
      await kill(workers[0]);
      workerKills += 1;
      workers[0] = startWorker(0);
      if (gatewayKills < 2 && workerKills % 3 === 0) {
        await stopGatewayProcess(gw, 'SIGKILL');
        gatewayKills += 1;
        gw = await startGatewayProcess(configPath);
      }
      if (gatewayKills === 2 && (await settled())) break;
    }
    writeFileSync(doneFile, '');
    await Promise.all(workers.map((worker) => (worker.exitCode === null ? once(worker, 'exit') : undefined)));
    expect(await stopGatewayProcess(gw)).toBe(0);
    expect(gatewayKills).toBe(2);

    const store = await SqliteStore.open({ path: join(dataDir, 'switchboard.db') });
    try {
      const tasks = new Map((await store.board.list({ limit: 10_000 })).map((task) => [task.id, task]));
      expect(tasks.size).toBe(TASKS);
      const acknowledged = new Map<string, string[]>();
      for (const line of existsSync(logFile) ? readFileSync(logFile, 'utf8').trim().split('\n') : []) {
        const [taskId, token, outcome] = line.split(' ');
        if (outcome === 'completed') acknowledged.set(taskId, [...(acknowledged.get(taskId) ?? []), token]);
      }
      let done = 0;
      let expired = 0;
      for (const task of tasks.values()) {
        const view = (await store.board.view(task.id))!;
        // Attempts add up: one row per claim, each ended, the token spent once per claim, failures counted.
        expect(view.attempts.map((attempt) => attempt.attempt)).toEqual(Array.from({ length: task.attempts }, (_, i) => i + 1));
        expect(task.token).toBe(task.attempts);
        expect(view.attempts.filter((attempt) => attempt.outcome === 'expired').length).toBe(task.failures);
        expect(view.attempts.every((attempt) => attempt.outcome !== null)).toBe(true);
        expired += task.failures;
        const completed = view.attempts.filter((attempt) => attempt.outcome === 'completed');
        if (task.state === 'done') {
          done += 1;
          expect(completed).toHaveLength(1);
          // At most one worker was told it completed the task, and only under the token that did.
          expect((acknowledged.get(task.id) ?? []).every((token) => Number(token) === completed[0].token)).toBe(true);
          expect(acknowledged.get(task.id)?.length ?? 0).toBeLessThanOrEqual(1);
          for (const dependency of dependencies.get(task.id)!)
            expect(view.attempts[0].startedAt).toBeGreaterThanOrEqual(tasks.get(dependency)!.doneAt!);
        } else {
          expect(completed).toHaveLength(0);
          // Gave up, or waits behind a task that gave up.
          if (task.state === 'blocked') expect(task.blockKind).toBe('gave_up');
          else {
            expect(task.state).toBe('todo');
            expect(dependencies.get(task.id)!.some((dependency) => tasks.get(dependency)!.state !== 'done')).toBe(true);
          }
        }
      }
      expect(done).toBeGreaterThan(TASKS * 0.9);
      // The kills landed while work was in flight: claims of killed workers were taken back and counted.
      expect(expired).toBeGreaterThan(0);
      console.log(
        `board crash test: ${done} done, ${TASKS - done} gave up or behind one, ${expired} expired attempts, ${workerKills} worker kills, ${gatewayKills} gateway kills`,
      );
    } finally {
      await store.close();
    }
  }, 240_000);
});
