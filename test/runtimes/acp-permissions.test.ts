/**
 * What an ACP agent may do, decided by the gateway (docs/runtimes.md "Permissions and what the gateway serves"): a
 * change the gateway cannot check against the workdir (an edit, delete or move naming no location) is denied unless
 * the config allows it outright, and a refusal of a path names the workdir once.
 */
import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decidePermission } from '../../src/runtimes/acp-permissions.js';
import { AcpHost } from '../../src/runtimes/acp-host.js';
import { ChildRecords } from '../../src/processes.js';
import type { RuntimeUpdate } from '../../src/ports/runtimes.js';
import { RunRecorder } from '../../src/runtimes/run-recorder.js';

const root = realpathSync(mkdtempSync(join(tmpdir(), 'sb-acp-perm-')));
const SOURCE = 'acp.agents.fake.permissions';

describe('ACP permissions', () => {
  it('denies an edit, delete or move that names no location by default, saying why and how to allow it', async () => {
    for (const kind of ['edit', 'delete', 'move'] as const) {
      for (const locations of [undefined, []]) {
        expect(await decidePermission({ kind, title: 'Change something', locations }, root, {}, SOURCE)).toEqual({
          allow: false,
          why: `${kind} names no location, so the gateway cannot check that it stays inside the workdir ${root}; denied by default (set ${SOURCE}.${kind} to "allow" to allow what cannot be checked)`,
        });
      }
    }
  });

  it('allows an edit that names no location when the config allows edits outright, and a located one inside the workdir by default', async () => {
    expect(await decidePermission({ kind: 'edit', title: 'Edit', locations: [] }, root, { edit: 'allow' }, SOURCE)).toEqual({
      allow: true,
      why: `edit is allowed (${SOURCE}.edit)`,
    });
    const inside = await decidePermission({ kind: 'edit', title: 'Edit', locations: [{ path: join(root, 'a.txt') }] }, root, {}, SOURCE);
    expect(inside).toEqual({ allow: true, why: 'edit is allowed (the default for edit) inside the workdir' });
    // Looking needs no location.
    expect((await decidePermission({ kind: 'read', title: 'Read' }, root, {}, SOURCE)).allow).toBe(true);
  });

  it('refuses a path outside the workdir naming the workdir once', async () => {
    const updates: RuntimeUpdate[] = [];
    const recorder = new RunRecorder({ report: async (batch) => void updates.push(...batch) });
    const host = new AcpHost({
      root,
      policy: {},
      source: SOURCE,
      recorder,
      records: new ChildRecords(undefined),
      recordPrefix: 'run-1',
      writeRefusal: async () => undefined,
      graceMs: 100,
      askToRun: async () => ({ approved: false, why: 'nobody asked here' }),
    });
    const why = `path "/etc/hostname" is outside the workdir ${root}; give a path inside it`;
    await expect(host.readTextFile({ sessionId: 's', path: '/etc/hostname' })).rejects.toMatchObject({ message: `Invalid params: ${why}` });
    await recorder.settled();
    expect(updates).toEqual([{ kind: 'file', op: 'refused', path: '/etc/hostname', why }]);
  });

  it('with execute "ask", runs a command an approved execute permission named, once, and puts any other to a person first', async () => {
    const asked: { command: string; args: string[]; cwd: string }[] = [];
    let approve = true;
    const host = new AcpHost({
      root,
      policy: { execute: 'ask' },
      source: SOURCE,
      recorder: new RunRecorder({ report: async () => {} }),
      records: new ChildRecords(undefined),
      recordPrefix: 'run-2',
      writeRefusal: async () => undefined,
      graceMs: 100,
      askToRun: async (command) => {
        asked.push(command);
        return { approved: approve, why: approve ? 'cli:ann approved it' : 'cli:ann denied approval request apr_1: no' };
      },
    });
    expect(host.terminalsOffered).toBe(true);
    // A permission approved before, for `echo hi`: the terminal that runs it uses it without asking again.
    host.approvedExecute({ command: 'echo hi' });
    const first = await host.createTerminal({ sessionId: 's', command: 'echo', args: ['hi'] });
    expect(asked).toEqual([]);
    await host.waitForExit(first.terminalId);
    // Used: the same command again, and one it did not name, are put to a person, with the folder.
    host.approvedExecute({ command: 'ls' });
    const second = await host.createTerminal({ sessionId: 's', command: 'echo', args: ['hi'] });
    expect(asked).toEqual([{ command: 'echo', args: ['hi'], cwd: root }]);
    await host.waitForExit(second.terminalId);
    approve = false;
    await expect(host.createTerminal({ sessionId: 's', command: 'rm', args: ['-rf', 'x'] })).rejects.toMatchObject({
      message: 'Invalid params: running rm was refused: cli:ann denied approval request apr_1: no',
    });
    await host.close();
  });
});
