/**
 * Claude Code's team files under hostile input: anyone on the machine may write them, so a name read from them (an
 * inbox entry's sender, a member of config.json, a task's number or owner) never becomes a path outside the team's
 * folders, and no folder or file is opened through a link. What is refused is set aside with its reason and never
 * written to.
 */
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { FrontInput, Opening } from '../../src/ports/gateway.js';
import type { BoardService } from '../../src/board/board.js';
import { parseConfigText } from '../../src/config/load.js';
import { type Gateway, systemClock } from '../../src/gateway/gateway.js';
import { PermanentDeliveryError } from '../../src/kit/retry.js';
import { ClaudeTasks } from '../../src/mailbox/claude-tasks.js';
import { ClaudeTeam } from '../../src/mailbox/claude-team.js';
import type { OutboxRecord } from '../../src/ports/index.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

/** A team "crew" (lead and ann are ours, claudey a Claude Code teammate) mirrored under `<base>/claude`. */
const setup = () => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'sb-claude-hostile-')));
  const claudeDir = join(base, 'claude');
  mkdirSync(claudeDir);
  const { config } = parseConfigText(
    `{
      teams: [{ id: "crew", lead: "lead", members: ["ann", "claudey"], claudeDir: "${claudeDir}" }],
      agents: { list: [{ id: "lead", model: "scripted/echo" }, { id: "ann", model: "scripted/echo" }] },
      models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "ok" }] } } } } },
    }`,
    '/test/switchboard.json5',
    {},
  );
  const accepted: { agentId: string; from: string; text: string }[] = [];
  const logs: string[] = [];
  const team = new ClaudeTeam(
    { ...config.teams[0], claudeDir },
    {
      config,
      board: undefined as unknown as BoardService,
      api: () => ({
        accept: async (input: FrontInput, opening: Opening) => {
          accepted.push({ agentId: opening.agentId, from: input.provenance.peer ?? '', text: input.text });
          return undefined as never;
        },
      }),
      clock: systemClock,
      log: (message) => logs.push(message),
    },
  );
  const dir = join(claudeDir, 'teams', 'crew');
  return { base, claudeDir, dir, team, accepted, logs };
};

const entry = (from: string, text: string) => ({ from, text, timestamp: new Date().toISOString(), read: false });
const reply = (peer: string) =>
  ({ payload: { route: { peer, account: 'crew/lead' }, text: 'hello back' }, createdAt: Date.now() }) as unknown as OutboxRecord;
const json = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

describe('Claude Code team files: names from the files', () => {
  it('a message whose sender is a path is set aside, marked read and logged; the messages after it are taken', async () => {
    const { dir, team, accepted, logs } = setup();
    await team.publish();
    const inbox = join(dir, 'inboxes', 'lead.json');
    writeFileSync(inbox, JSON.stringify([entry('../../../../outside/x', 'from a path'), entry('claudey', 'hi')]));
    await team.ingest();
    expect(accepted).toEqual([{ agentId: 'lead', from: 'claudey', text: 'hi' }]);
    expect(json(inbox).map((kept: { from: string; read: boolean }) => [kept.from, kept.read])).toEqual([
      ['../../../../outside/x', true],
      ['claudey', true],
    ]);
    expect(logs.join('\n')).toMatch(/set aside.*"\.\.\/\.\.\/\.\.\/\.\.\/outside\/x" is not a name/);
  });

  it('a reply to a sender or member whose name is a path is refused and writes nothing, and an unknown one lists no such name', async () => {
    const { base, dir, team } = setup();
    await team.publish();
    // The name joins config.json as a member, as a teammate would.
    const config = json(join(dir, 'config.json'));
    config.members.push({ agentId: 'x@crew', name: '../../../../outside/x', agentType: 'general-purpose' });
    writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
    await expect(team.deliver(reply('../../../../outside/x'), 'lead')).rejects.toThrow(PermanentDeliveryError);
    expect(existsSync(join(base, 'outside'))).toBe(false);
    const unknown = await team.deliver(reply('nobody'), 'lead').catch((error: Error) => error);
    expect(unknown).toBeInstanceOf(PermanentDeliveryError);
    expect((unknown as Error).message).toBe('no teammate "nobody" in Claude Code team crew (members: lead, ann)');
  });
});

describe('Claude Code team files: links', () => {
  it('a team folder that is a symlink is neither read nor written', async () => {
    const { base, dir, team, accepted } = setup();
    const elsewhere = join(base, 'elsewhere');
    mkdirSync(join(elsewhere, 'inboxes'), { recursive: true });
    const inbox = JSON.stringify([entry('claudey', 'read through a link')]);
    writeFileSync(join(elsewhere, 'inboxes', 'lead.json'), inbox);
    mkdirSync(join(dir, '..'), { recursive: true });
    symlinkSync(elsewhere, dir);
    await expect(team.publish()).rejects.toThrow(/is a symlink/);
    await expect(team.ingest()).rejects.toThrow(/is a symlink/);
    expect(accepted).toEqual([]);
    expect(readdirSync(elsewhere)).toEqual(['inboxes']);
    expect(readFileSync(join(elsewhere, 'inboxes', 'lead.json'), 'utf8')).toBe(inbox);
  });

  it('an inboxes folder or an inbox file that is a symlink is not read: the other inboxes are, and it is logged once', async () => {
    for (const linked of ['inboxes folder', 'inbox file']) {
      const { base, dir, team, accepted, logs } = setup();
      await team.publish();
      const secret = join(base, 'secret');
      mkdirSync(secret);
      const outside = JSON.stringify([entry('claudey', `read through the ${linked}`)]);
      writeFileSync(join(secret, 'lead.json'), outside);
      if (linked === 'inbox file') {
        writeFileSync(join(dir, 'inboxes', 'ann.json'), JSON.stringify([entry('claudey', 'for ann')]));
        const lead = join(dir, 'inboxes', 'lead.json');
        // Replaced by a link to a file elsewhere.
        rmSync(lead);
        symlinkSync(join(secret, 'lead.json'), lead);
      } else {
        rmSync(join(dir, 'inboxes'), { recursive: true });
        symlinkSync(secret, join(dir, 'inboxes'));
      }
      await team.ingest().catch(() => {});
      await team.ingest().catch(() => {});
      expect(accepted.filter((message) => message.text.startsWith('read through'))).toEqual([]);
      expect(readFileSync(join(secret, 'lead.json'), 'utf8')).toBe(outside);
      if (linked === 'inbox file') {
        expect(accepted).toEqual([{ agentId: 'ann', from: 'claudey', text: 'for ann' }]);
        expect(lstatSync(join(dir, 'inboxes', 'lead.json')).isSymbolicLink()).toBe(true);
        expect(logs.filter((line) => line.includes('the inbox of lead is not read'))).toHaveLength(1);
      }
    }
  });
});

describe('Claude Code task list: names from the files', () => {
  it("a task number in the mirror's state that is a path is numbered anew; an owner that is a path claims nothing", async () => {
    const { base, claudeDir } = setup();
    let board!: BoardService;
    gateway = await startTestGateway(
      `{ agents: { list: [{ id: "lead", model: "scripted/echo" }] },
         models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "ok" }] } } } } } }`,
      {},
      undefined,
      { onBoard: (made) => (board = made) },
    );
    const user = { kind: 'user' as const, name: 'user' };
    const task = (await board.create({ title: 'spec', board: 'solo' }, user)).task;
    const logs: string[] = [];
    const mirror = () =>
      new ClaudeTasks(
        { id: 'solo', lead: 'lead', members: ['claudey'], skills: {}, claudeDir },
        board,
        () => ['lead'],
        (line) => logs.push(line),
        systemClock,
      );
    const tasks = join(claudeDir, 'tasks', 'solo');
    await mirror().sync();
    expect(json(join(tasks, '1.json'))).toMatchObject({ id: '1', subject: 'spec', status: 'pending' });
    // Someone rewrites the mirror's state: the board task's number is a path.
    const state = json(join(tasks, '.switchboard.json'));
    state.ids[task.id] = '../../../outside/t';
    writeFileSync(join(tasks, '.switchboard.json'), JSON.stringify(state));
    await mirror().sync();
    expect(existsSync(join(base, 'outside'))).toBe(false);
    expect(json(join(tasks, '.switchboard.json')).ids[task.id]).toBe(2);
    expect(json(join(tasks, '2.json'))).toMatchObject({ id: '2', subject: 'spec' });
    // A teammate "claims" it under a name that is a path: not claimed, and the board's truth is written back.
    const sync = mirror();
    await sync.sync();
    writeFileSync(join(tasks, '2.json'), JSON.stringify({ ...json(join(tasks, '2.json')), status: 'in_progress', owner: '../x' }));
    await sync.sync();
    expect(await board.task(task.id)).toMatchObject({ state: 'ready' });
    expect(json(join(tasks, '2.json'))).toMatchObject({ status: 'pending' });
    expect(logs.join('\n')).toMatch(/task 2 .* is not taken: its owner "\.\.\/x" is not a name/);
  });
});
