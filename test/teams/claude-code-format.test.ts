/**
 * The team files as Claude Code 2.1.332 writes them (read from its npm package; see docs/teams.md): a session's own
 * team (`session-<8 characters>`, made by Claude Code at start, led by `team-lead`) is joined, never made or re-led; its
 * lead's messages, in the entry form it writes now (type, msgV, msg_id), become inputs, and replies reach its inbox;
 * a task file Claude Code is updating (under `<n>.json.lock`) is not written over.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { BoardService } from '../../src/board/board.js';
import { parseConfigText } from '../../src/config/load.js';
import { type Gateway, systemClock } from '../../src/gateway/gateway.js';
import { ClaudeTasks } from '../../src/mailbox/claude-tasks.js';
import { ClaudeTeam } from '../../src/mailbox/claude-team.js';
import type { OutboxRecord } from '../../src/ports/index.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import type { FrontInput, Opening } from '../../src/ports/gateway.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

const setup = (claudeTeam?: string) => {
  const claudeDir = join(realpathSync(mkdtempSync(join(tmpdir(), 'sb-claude-format-'))), 'claude');
  mkdirSync(claudeDir);
  const { config } = parseConfigText(
    `{
      teams: [{ id: "crew", lead: "lead", members: ["ann"], claudeDir: "${claudeDir}"${claudeTeam ? `, claudeTeam: "${claudeTeam}"` : ''} }],
      agents: { list: [{ id: "lead", model: "scripted/echo" }, { id: "ann", model: "scripted/echo" }] },
      models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "ok" }] } } } } },
    }`,
    '/test/switchboard.json5',
    {},
  );
  const accepted: { agentId: string; from: string; text: string }[] = [];
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
      log: () => {},
    },
  );
  return { claudeDir, team, accepted };
};

/** config.json as Claude Code 2.1.332 makes it for a session's team at start. */
const sessionTeam = (name: string) => ({
  name,
  createdAt: 1_765_000_000_000,
  leadAgentId: `team-lead@${name}`,
  leadSessionId: '1a2b3c4d-0000-4000-8000-000000000000',
  leadProcess: { pid: 4242, pidSpace: 'host', claimedAt: 1_765_000_000_000 },
  members: [
    {
      agentId: `team-lead@${name}`,
      name: 'team-lead',
      agentType: 'team-lead',
      joinedAt: 1_765_000_000_000,
      tmuxPaneId: 'leader',
      cwd: '/work',
      subscriptions: [],
      backendType: 'in-process',
    },
  ],
});

const json = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

describe("Claude Code's team files (2.1.332)", () => {
  it('a team Claude Code made keeps its name, its lead and its fields; our agents join it as members', async () => {
    const { claudeDir, team } = setup();
    const dir = join(claudeDir, 'teams', 'crew');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'config.json'), JSON.stringify(sessionTeam('crew')));
    await team.publish();
    const config = json(join(dir, 'config.json'));
    expect(config).toMatchObject({ name: 'crew', leadAgentId: 'team-lead@crew', leadProcess: { pid: 4242 } });
    expect(config.members.map((member: { agentId: string }) => member.agentId)).toEqual(['team-lead@crew', 'lead@crew', 'ann@crew']);
  });

  it("with claudeTeam, a session's own team is joined once Claude Code made it, and nothing is made before", async () => {
    const { claudeDir, team, accepted } = setup('session-1a2b3c4d');
    const dir = join(claudeDir, 'teams', 'session-1a2b3c4d');
    await expect(team.publish()).rejects.toThrow(/no Claude Code team session-1a2b3c4d yet/);
    await expect(team.ingest()).rejects.toThrow(/no Claude Code team session-1a2b3c4d yet/);
    expect(existsSync(dir)).toBe(false);
    mkdirSync(dir);
    writeFileSync(join(dir, 'config.json'), JSON.stringify(sessionTeam('session-1a2b3c4d')));
    // Claude Code's lead sends to "ann" (now on its roster), as SendMessage writes it.
    await team.ingest();
    expect(json(join(dir, 'config.json')).members.map((member: { name: string }) => member.name)).toEqual(['team-lead', 'lead', 'ann']);
    writeFileSync(
      join(dir, 'inboxes', 'ann.json'),
      JSON.stringify([
        {
          from: 'team-lead',
          text: 'review the spec',
          timestamp: new Date().toISOString(),
          summary: 'review',
          type: 'message',
          read: false,
          msgV: 1,
          msg_id: '0f8fad5b-d9cb-469f-a165-70867728950e',
        },
      ]),
    );
    await team.ingest();
    expect(accepted).toEqual([{ agentId: 'ann', from: 'team-lead', text: 'review the spec' }]);
    await team.deliver(
      {
        payload: { route: { peer: 'team-lead', account: 'crew/ann' }, text: 'reviewed' },
        createdAt: Date.now(),
      } as unknown as OutboxRecord,
      'ann',
    );
    expect(json(join(dir, 'inboxes', 'team-lead.json'))).toEqual([expect.objectContaining({ from: 'ann', text: 'reviewed', read: false })]);
  });
});

describe("Claude Code's task list (2.1.332)", () => {
  it('a task file a teammate is updating under its <n>.json.lock is not written until the lock is gone', async () => {
    const { claudeDir } = setup();
    let board!: BoardService;
    gateway = await startTestGateway(
      `{ agents: { list: [{ id: "lead", model: "scripted/echo" }] },
         models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "ok" }] } } } } } }`,
      {},
      undefined,
      { onBoard: (made) => (board = made) },
    );
    const user = { kind: 'user' as const, name: 'user' };
    const first = (await board.create({ title: 'spec', board: 'solo' }, user)).task;
    const mirror = new ClaudeTasks(
      { id: 'solo', lead: 'lead', members: ['claudey'], skills: {}, claudeDir },
      board,
      () => ['lead'],
      () => {},
      systemClock,
    );
    const tasks = join(claudeDir, 'tasks', 'solo');
    await mirror.sync();
    expect(json(join(tasks, '1.json')).blocks).toEqual([]);
    // A teammate's TaskUpdate holds task 1's own lock; meanwhile the board gets a task that depends on it.
    mkdirSync(join(tasks, '1.json.lock'));
    await board.create({ title: 'build', board: 'solo', dependsOn: [first.id] }, user);
    await expect(mirror.sync()).rejects.toThrow(/1\.json\.lock is held by another process/);
    expect(json(join(tasks, '1.json')).blocks).toEqual([]);
    rmSync(join(tasks, '1.json.lock'), { recursive: true });
    await mirror.sync();
    expect(json(join(tasks, '1.json')).blocks).toEqual(['2']);
  });
  it("the fields only Claude Code writes (activeForm, metadata) are kept when the board's change is written", async () => {
    const { claudeDir } = setup();
    let board!: BoardService;
    gateway = await startTestGateway(
      `{ agents: { list: [{ id: "lead", model: "scripted/echo" }] },
         models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "ok" }] } } } } } }`,
      {},
      undefined,
      { onBoard: (made) => (board = made) },
    );
    const user = { kind: 'user' as const, name: 'user' };
    const first = (await board.create({ title: 'spec', board: 'solo' }, user)).task;
    const mirror = new ClaudeTasks(
      { id: 'solo', lead: 'lead', members: ['claudey'], skills: {}, claudeDir },
      board,
      () => ['lead'],
      () => {},
      systemClock,
    );
    const path = join(claudeDir, 'tasks', 'solo', '1.json');
    await mirror.sync();
    writeFileSync(path, JSON.stringify({ ...json(path), activeForm: 'Writing the spec', metadata: { source: 'cli' } }));
    await board.create({ title: 'build', board: 'solo', dependsOn: [first.id] }, user);
    await mirror.sync();
    expect(json(path)).toMatchObject({ blocks: ['2'], activeForm: 'Writing the spec', metadata: { source: 'cli' } });
  });
});
