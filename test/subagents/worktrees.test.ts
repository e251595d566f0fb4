/**
 * worktree: true gives each child its own git worktree on a new branch (its tools work there, its result
 * names it); archiving removes the folder and keeps the branch. cwd must stay inside the workspace.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { startGateway } from '../../src/app.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

const MAIN = 'agent:coder:main';
const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-C', cwd, ...args], { encoding: 'utf8' }).trim();

function repo(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sb-repo-'));
  git(dir, 'init', '-q', '-b', 'main');
  writeFileSync(join(dir, 'README.md'), 'shared file\n');
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'src', 'app.txt'), 'app\n');
  git(dir, 'add', '.');
  git(dir, '-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-q', '-m', 'init');
  return dir;
}

let offset = 0;
async function start(workspace: string): Promise<Gateway> {
  const { config } = parseConfigText(
    `{
      agents: { list: [{ id: "coder", model: "scripted/c", workspace: ${JSON.stringify(workspace)} }] },
      models: { providers: { scripted: { type: "scripted", models: { c: { rules: [
        { match: "sub-agent", reply: "noted" },
        { match: "write (\\\\S+)", steps: [{ toolCalls: [{ tool: "write_file", args: { path: "{{match.1}}", content: "from the child" } }] }, { text: "{{tool.write_file}}" }] },
        { match: "read (\\\\S+)", steps: [{ toolCalls: [{ tool: "read_file", args: { path: "{{match.1}}" } }] }, { text: "read: {{tool.read_file.content}}" }] },
      ] } } } } },
    }`,
    '/t.json5',
  );
  offset = 0;
  gateway = await startGateway({
    config,
    store: await SqliteStore.open({ path: ':memory:' }),
    gatewayId: 'gw-wt',
    dataDir: mkdtempSync(join(tmpdir(), 'sb-data-')),
    clock: { now: () => Date.now() + offset },
  });
  await gateway.openSession(MAIN, 'coder');
  return gateway;
}

const from = { sessionKey: MAIN, agentId: 'coder', idempotencyKey: 'k' };

describe('sub-agent worktrees', () => {
  it('parallel children work in their own worktrees on new branches; archive removes the folders and keeps the branches', async () => {
    const workspace = repo();
    const g = await start(workspace);
    const a = await g.subagents.spawn({ ...from, idempotencyKey: 'a' }, { task: 'read README.md', worktree: true });
    const b = await g.subagents.spawn({ ...from, idempotencyKey: 'b' }, { task: 'read app.txt', worktree: true, cwd: 'src' });
    const records = await Promise.all(
      [a, b].map((spawned) =>
        waitUntil('settled', async () => {
          const record = await g.store.subagents.getBySession(spawned.childSessionKey);
          return record?.state === 'succeeded' && record.completion === 'delivered' && record;
        }),
      ),
    );
    const [wa, wb] = records.map((record) => record.worktree!);
    expect(wa.path).not.toBe(wb.path);
    expect(wa.branch).toBe(`switchboard/subagent-${records[0].id}`);
    expect(git(workspace, 'worktree', 'list')).toContain(wa.path);
    expect(git(wa.path, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe(wa.branch);
    expect(records[0].workdir).toBe(wa.path);
    expect(records[1].workdir).toBe(join(wb.path, 'src'));
    // Each child's tools read from its own copy.
    expect(records[0].result).toBe('read: shared file\n');
    expect(records[1].result).toBe('read: app\n');
    const completion = (await g.store.inputs.getByIdempotencyKey(`completion:${a.childSessionKey}:${a.runId}`))!;
    expect(completion.text).toContain(`Worktree: ${wa.path} (branch ${wa.branch})`);

    expect(await g.subagents.archive()).toBe(0);
    offset = 61 * 60_000;
    expect(await g.subagents.archive()).toBe(2);
    expect(existsSync(wa.path)).toBe(false);
    expect(
      git(workspace, 'branch', '--list', 'switchboard/*')
        .split('\n')
        .map((line) => line.trim())
        .sort(),
    ).toEqual([wa.branch, wb.branch].sort());
    expect(await g.getSession(a.childSessionKey)).toMatchObject({ state: 'archived' });
  });

  it("a child in a worktree writes its own copy and cannot write the parent's tree, by relative or absolute path", async () => {
    const workspace = repo();
    const g = await start(workspace);
    const finished = async (task: string) => {
      const child = await g.subagents.spawn({ ...from, idempotencyKey: task }, { task, worktree: true });
      return waitUntil('settled', async () => {
        const record = await g.store.subagents.getBySession(child.childSessionKey);
        return record?.state === 'succeeded' && record;
      });
    };
    const own = await finished('write README.md');
    expect(JSON.parse(own.result!)).toEqual({ status: 'ok', path: 'README.md', bytes: 14 });
    expect(readFileSync(join(own.worktree!.path, 'README.md'), 'utf8')).toBe('from the child');
    expect(readFileSync(join(workspace, 'README.md'), 'utf8')).toBe('shared file\n');
    for (const path of [join(workspace, 'README.md'), `../../${basename(workspace)}/README.md`]) {
      const refused = await finished(`write ${path}`);
      expect(JSON.parse(refused.result!)).toEqual({
        status: 'error',
        error: expect.stringMatching(
          new RegExp(`^path "${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}" is outside the workspace ${refused.workdir}`),
        ),
      });
    }
    expect(readFileSync(join(workspace, 'README.md'), 'utf8')).toBe('shared file\n');
    expect(git(workspace, 'status', '--porcelain')).toBe('');
  });

  it('a workspace that is a folder inside the repository maps to the same folder in the worktree', async () => {
    const root = repo();
    const g = await start(join(root, 'src'));
    const child = await g.subagents.spawn(from, { task: 'read app.txt', worktree: true });
    const record = await waitUntil('settled', async () => {
      const found = await g.store.subagents.getBySession(child.childSessionKey);
      return found?.state === 'succeeded' && found;
    });
    expect(record.workdir).toBe(join(record.worktree!.path, 'src'));
    expect(record.result).toBe('read: app\n');
  });

  it('a workspace outside git, or a cwd outside the workspace, is refused with the reason', async () => {
    const plain = mkdtempSync(join(tmpdir(), 'sb-plain-'));
    const g = await start(plain);
    await expect(g.subagents.spawn(from, { task: 'x', worktree: true })).rejects.toMatchObject({
      code: 'WORKTREE_FAILED',
      message: expect.stringMatching(
        new RegExp(`^worktree: true needs the agent's workspace \\(${plain}\\) to be in a git repository: fatal: not a git repository`),
      ),
    });
    await expect(g.subagents.spawn(from, { task: 'x', cwd: '../..' })).rejects.toThrow(
      `cwd "../.." is outside the workspace ${plain}; give a folder inside it`,
    );
    await expect(g.subagents.spawn(from, { task: 'x', cwd: 'missing' })).rejects.toThrow(
      `cwd "missing" is not a folder in the workspace ${plain}`,
    );
    expect(await g.store.subagents.list()).toEqual([]);
  });
});
