/**
 * A team mirrored in Claude Code's files: a Claude Code teammate (a separate process that writes exactly its inbox
 * format, under its lock, concurrently with the gateway) loses no message and gets each reply once; an idle notice in
 * its JSON form reads as words; the board is its task list, and its own claim and completion there reach the board.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { BoardService } from '../../src/board/board.js';
import { type Gateway, systemClock } from '../../src/gateway/gateway.js';
import { ClaudeTasks } from '../../src/mailbox/claude-tasks.js';
import type { Teams } from '../../src/mailbox/teams.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
  vi.restoreAllMocks();
});

const setup = () => {
  const claudeDir = realpathSync(mkdtempSync(join(tmpdir(), 'sb-claude-')));
  const config = `{
    board: { sweepIntervalMs: 50 },
    teams: [{ id: "crew", lead: "lead", members: ["ann", "claudey"], claudeDir: "${claudeDir}" }],
    agents: { list: [{ id: "lead", model: "scripted/lead" }, { id: "ann", model: "scripted/worker" }] },
    models: { providers: { scripted: { type: "scripted", models: {
      lead: { rules: [{ reply: "ack: {{input}}" }] },
      worker: { rules: [{ steps: [{ toolCalls: [{ tool: "board_complete", args: { result: "done by ann" } }] }, { text: "done" }] }] },
    } } } },
  }`;
  return { claudeDir, config, team: join(claudeDir, 'teams', 'crew') };
};

/** A Claude Code teammate: appends to an inbox array under `<inbox>.lock` (mkdir), as Claude Code does. */
const TEAMMATE = `
const fs = require('node:fs');
const [inbox, count] = [process.argv[1], Number(process.argv[2])];
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
for (let i = 0; i < count; i++) {
  for (;;) { try { fs.mkdirSync(inbox + '.lock'); break; } catch { sleep(1); } }
  const entries = JSON.parse(fs.readFileSync(inbox, 'utf8'));
  const text = i === 0 ? JSON.stringify({ type: 'idle_notification', from: 'claudey', timestamp: new Date().toISOString(), idleReason: 'available' }) : 'note ' + i;
  entries.push({ from: 'claudey', text, timestamp: new Date(Date.now() + i).toISOString(), color: 'blue', read: false });
  fs.writeFileSync(inbox + '.tmp', JSON.stringify(entries, null, 2));
  fs.renameSync(inbox + '.tmp', inbox);
  fs.rmdirSync(inbox + '.lock');
  if (i % 20 === 19) sleep(15);
}`;

describe('Claude Code task list passes', () => {
  it("an idle pass reads no task; a teammate's edit or a change of the team's board makes the next pass a full one", async () => {
    const { config, claudeDir } = setup();
    let board!: BoardService;
    gateway = await startTestGateway(config, {}, undefined, { onBoard: (made) => (board = made) });
    const user = { kind: 'user' as const, name: 'user' };
    const first = (await board.create({ title: 'spec', board: 'solo' }, user)).task;
    // A mirror of a team of its own, passed by hand (the gateway's passes mirror "crew", whose board stays empty).
    const mirror = new ClaudeTasks(
      { id: 'solo', lead: 'lead', members: ['claudey'], skills: {}, claudeDir },
      board,
      () => ['lead'],
      () => {},
      systemClock,
    );
    const views = vi.spyOn(gateway.store.board, 'view');
    const lists = vi.spyOn(gateway.store.board, 'list');
    const solo = () => lists.mock.calls.filter(([filter]) => filter?.board === 'solo').length;
    await mirror.sync();
    expect([solo(), views.mock.calls.length]).toEqual([1, 1]);
    await mirror.sync();
    await mirror.sync();
    expect([solo(), views.mock.calls.length]).toEqual([1, 1]);
    // Another board's change is not the team's.
    await board.create({ title: 'elsewhere', board: 'other' }, user);
    await mirror.sync();
    expect(solo()).toBe(1);
    // The teammate claims the task in its file: read back, and claimed on the board.
    const path = join(claudeDir, 'tasks', 'solo', '1.json');
    writeFileSync(path, JSON.stringify({ ...JSON.parse(readFileSync(path, 'utf8')), status: 'in_progress', owner: 'claudey' }));
    await mirror.sync();
    expect(solo()).toBe(2);
    expect(await board.task(first.id)).toMatchObject({ state: 'running', claimWorker: 'claudey' });
    // The claim was a board event: one more full pass, then quiet again.
    await mirror.sync();
    await mirror.sync();
    expect(solo()).toBe(3);
    // A change on the board reaches the file at the next pass.
    await board.create({ title: 'build', board: 'solo', dependsOn: [first.id] }, user);
    await mirror.sync();
    expect(solo()).toBe(4);
    expect(JSON.parse(readFileSync(join(claudeDir, 'tasks', 'solo', '2.json'), 'utf8'))).toMatchObject({
      subject: 'build',
      blockedBy: ['1'],
    });
  });
});

describe('Claude Code team files', () => {
  it('a teammate writing the lead inbox under its lock, concurrently, loses nothing; each reply lands once in its inbox', async () => {
    const { config, team } = setup();
    gateway = await startTestGateway(config);
    const published = JSON.parse(readFileSync(join(team, 'config.json'), 'utf8'));
    expect(published).toMatchObject({ name: 'crew', leadAgentId: 'lead@crew' });
    expect(published.members.map((member: { agentId: string; agentType: string }) => `${member.agentId}:${member.agentType}`)).toEqual([
      'lead@crew:team-lead',
      'ann@crew:switchboard',
    ]);
    // The teammate joins as Claude Code does: in config.json, with an inbox of its own.
    published.members.push({ agentId: 'claudey@crew', name: 'claudey', agentType: 'general-purpose' });
    writeFileSync(join(team, 'config.json'), JSON.stringify(published));
    writeFileSync(join(team, 'inboxes', 'claudey.json'), '[]');
    const total = 300;
    const writer = spawn(process.execPath, ['-e', TEAMMATE, join(team, 'inboxes', 'lead.json'), String(total)], { stdio: 'inherit' });
    expect((await once(writer, 'exit'))[0]).toBe(0);
    const read = () => JSON.parse(readFileSync(join(team, 'inboxes', 'lead.json'), 'utf8')) as { text: string; read: boolean }[];
    // Generous waits: 300 messages and their runs on a loaded 2-core machine; the assertions are on counts, not time.
    await waitUntil('all marked read', () => read().every((entry) => entry.read), 150_000);
    expect(read()).toHaveLength(total);
    const sessionKey = 'agent:lead:claude:direct:claudey';
    const inputs = await gateway.store.inputs.list({ sessionKey, limit: 1000 });
    expect(inputs).toHaveLength(total);
    expect(inputs[0].text).toBe('claudey is idle (available).');
    await waitUntil(
      'every input run',
      async () => (await gateway!.store.inputs.list({ sessionKey, status: 'queued' })).length === 0,
      150_000,
    );
    const runs = await gateway.store.runs.list({ sessionKey, status: 'succeeded', limit: 1000 });
    const replies = () =>
      JSON.parse(readFileSync(join(team, 'inboxes', 'claudey.json'), 'utf8')) as { from: string; text: string; read: boolean }[];
    await waitUntil('every reply', () => replies().length === runs.length, 60_000);
    expect(new Set(replies().map((reply) => reply.text)).size).toBe(runs.length);
    expect(replies()[0]).toMatchObject({ from: 'lead', read: false, text: expect.stringMatching(/^ack: /) });
  }, 400_000);

  it("the board is the team's task list: a teammate's claim and completion there reach the board", async () => {
    const { config, claudeDir } = setup();
    let board!: BoardService;
    let teams!: Teams;
    gateway = await startTestGateway(config, {}, undefined, { onBoard: (made) => (board = made), onTeams: (made) => (teams = made) });
    const user = { kind: 'user' as const, name: 'user' };
    const first = (await board.create({ title: 'spec', body: 'write the spec', board: 'crew', assignee: 'claudey' }, user)).task;
    const second = (await board.create({ title: 'build', board: 'crew', dependsOn: [first.id] }, user)).task;
    const tasks = join(claudeDir, 'tasks', 'crew');
    const file = (n: number) => JSON.parse(readFileSync(join(tasks, `${n}.json`), 'utf8'));
    await waitUntil('mirrored', () => {
      try {
        return file(2).blockedBy.length === 1;
      } catch {
        return false;
      }
    });
    expect(file(1)).toEqual({ id: '1', subject: 'spec', description: 'write the spec', status: 'pending', blocks: ['2'], blockedBy: [] });
    expect(readFileSync(join(tasks, '.highwatermark'), 'utf8').trim()).toBe('2');
    // The teammate claims task 1 as Claude Code does: its file rewritten under the task list's lock.
    const edit = (n: number, change: Record<string, unknown>) =>
      writeFileSync(join(tasks, `${n}.json`), JSON.stringify({ ...file(n), ...change }));
    edit(1, { status: 'in_progress', owner: 'claudey' });
    await waitUntil('claimed on the board', async () => (await board.task(first.id))?.claimWorker === 'claudey');
    expect((await teams.status('crew')).members.find((member) => member.name === 'claudey')).toMatchObject({ state: 'busy' });
    edit(1, { status: 'completed' });
    await waitUntil('done, and the next one done by ann', async () => (await board.task(second.id))?.state === 'done', 60_000);
    expect((await board.task(first.id))!.result).toBe("completed by claudey in Claude Code's task list");
    await waitUntil('the task list follows', () => file(2).status === 'completed');
    // A change the board refuses is undone: task 2 is done, and no teammate can take it.
    edit(2, { status: 'in_progress', owner: 'claudey' });
    await waitUntil('undone', () => file(2).status === 'completed');
  }, 120_000);
});
