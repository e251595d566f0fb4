/** The quick start's demo config loads and its flows work: a direct answer, and research delegated to a sub-agent. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../src/config/load.js';
import type { BoardService } from '../../src/board/board.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { startGateway } from '../../src/app.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { stopTestGateway } from '../helpers/gateway.js';
import { ROOT } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
});

describe('the demo (examples/demo.json5)', () => {
  it('support delegates "research ..." to a sub-agent of expert and passes its result on when it arrives', async () => {
    const { config } = loadConfigFile(join(ROOT, 'examples/demo.json5'));
    gateway = await startGateway({ config, store: await SqliteStore.open({ path: ':memory:' }), gatewayId: 'gw-demo' });
    const sent = await gateway.send({ target: 'support', message: 'research cache invalidation', inbound: { channel: 'cli' } });
    const first = await gateway.waitForInput(sent.input.id, 10_000);
    expect(first).toMatchObject({
      status: 'completed',
      reply: `Good question. I've asked a researcher to look into "cache invalidation"; I'll tell you what they find.`,
    });
    const [child] = await gateway.listSubagents('agent:support:main');
    expect(child).toMatchObject({ agentId: 'expert', label: 'research' });
    const reply = await waitUntil('the result was passed on', async () =>
      (await gateway!.journalAfter(0, { sessionKey: 'agent:support:main' })).find(
        (event) => event.type === 'session.reply' && String((event.payload as { text: string }).text).startsWith('Our researcher is done'),
      ),
    );
    // What a good agent does with a result: passes it on in its own words, without the framework's completion block.
    expect((reply.payload as { text: string }).text).toBe(
      'Our researcher is done. In short: Technical take on "Research for a customer: cache invalidation": state the expected behaviour as a test, reproduce it, and change one thing at a time.\nWant me to dig deeper into any part of it?',
    );
  });

  it('each demo agent finishes a board task given to it (board_complete), so a first "board create --assignee" works', async () => {
    const { config } = loadConfigFile(join(ROOT, 'examples/demo.json5'));
    let board!: BoardService;
    gateway = await startGateway(
      { config, store: await SqliteStore.open({ path: ':memory:' }), gatewayId: 'gw-demo' },
      { onBoard: (made) => (board = made) },
    );
    const user = { kind: 'user' as const, name: 'user' };
    // A title with words the agents' other rules answer (error, time): a task is a task, whatever it says.
    const tasks = await Promise.all(
      ['support', 'expert', 'critic'].map(
        async (agent) => (await board.create({ title: `look at the timeout error ${agent}`, assignee: agent }, user)).task,
      ),
    );
    const ended = await waitUntil(
      'every task ended',
      async () => {
        const now = await Promise.all(tasks.map((task) => board.task(task.id)));
        return now.every((task) => task && !['ready', 'running'].includes(task.state)) && now;
      },
      20_000,
    );
    expect(ended.map((task) => [task!.assignee, task!.state, task!.failures])).toEqual([
      ['support', 'done', 0],
      ['expert', 'done', 0],
      ['critic', 'done', 0],
    ]);
    for (const task of ended) expect(task!.result).toContain(`"look at the timeout error ${task!.assignee}"`);
  });

  it('a greeting with a question gets the answer, not only the greeting', async () => {
    const { config } = loadConfigFile(join(ROOT, 'examples/demo.json5'));
    gateway = await startGateway({ config, store: await SqliteStore.open({ path: ':memory:' }), gatewayId: 'gw-demo' });
    const ask = async (message: string) =>
      gateway!.waitForInput((await gateway!.send({ target: 'support', message, inbound: { channel: 'cli' } })).input.id, 10_000);
    expect(await ask('hello, what are your opening hours?')).toMatchObject({
      status: 'completed',
      reply: expect.stringMatching(/^It's \S+ \(UTC\) here\. The desk is staffed 08:00-18:00 UTC on weekdays/),
    });
    expect(await ask('hi there')).toMatchObject({ reply: expect.stringMatching(/^Hi! I'm Sam/) });
  });

  it("the README's claim on the framework's own prompt text holds for every run of the demo's flows", async () => {
    const claim = readFileSync(join(ROOT, 'README.md'), 'utf8').match(
      /at most (\d+) characters in the demo's flows, recorded\s+per run as `preambleChars`/,
    );
    expect(claim).not.toBeNull();
    const { config } = loadConfigFile(join(ROOT, 'examples/demo.json5'));
    gateway = await startGateway({ config, store: await SqliteStore.open({ path: ':memory:' }), gatewayId: 'gw-demo' });
    for (const message of [
      'hello',
      'I want a refund',
      'what are your opening hours?',
      'my app crashes on start',
      'research cache invalidation',
    ]) {
      const sent = await gateway.send({ target: 'support', message, inbound: { channel: 'cli' } });
      expect(await gateway.waitForInput(sent.input.id, 10_000)).toMatchObject({ status: 'completed' });
    }
    await waitUntil(
      'the research result was passed on',
      async () =>
        (await gateway!.listRuns({ sessionKey: 'agent:support:main' })).length >= 6 &&
        (await gateway!.listRuns({})).every((run) => run.status !== 'running'),
    );
    const runs = await gateway.listRuns({ limit: 100 });
    expect(runs.length).toBeGreaterThanOrEqual(8);
    const largest = Math.max(...runs.map((run) => run.preambleChars));
    expect(largest).toBeLessThanOrEqual(Number(claim![1]));
    // Near the claim, so that the number says something: within 150 characters of it.
    expect(largest).toBeGreaterThan(Number(claim![1]) - 150);
  });
});
