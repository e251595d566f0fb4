/** `switchboard approvals list|show|approve|deny` and `switchboard budgets`, against a real gateway process (docs/gates.md). */
import { existsSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ApprovalRecord } from '../../src/ports/index.js';
import { cliWith, gatewayForSuite, tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const { dir, configPath } = tempConfig('{}');
const workspace = realpathSync(dir);
writeFileSync(
  configPath,
  `{
    budgets: { agents: { coder: { tokens: 1000000 } } },
    agents: { list: [{ id: "coder", model: "scripted/coder", workspace: ${JSON.stringify(workspace)}, exec: { enabled: true }, tools: { ask: ["exec"] } }] },
    models: { providers: { scripted: { type: "scripted", models: { coder: { rules: [
      { match: "^log (\\\\w+)", steps: [
        { toolCalls: [{ tool: "exec", args: { command: "sh", args: ["-c", "echo {{match.1}} >> log.txt"] } }] },
        { text: "exec said {{tool.exec.status}} {{tool.exec.code}}" },
      ] },
    ] } } } } },
  }`,
);
const cli = cliWith(configPath);
gatewayForSuite(configPath);

async function pending(): Promise<ApprovalRecord> {
  return waitUntil(
    'a pending request',
    async () => (JSON.parse((await cli('--json', 'approvals', 'list')).stdout) as { approvals: ApprovalRecord[] }).approvals[0],
    15_000,
    50,
  );
}

describe('switchboard approvals', () => {
  it('lists and shows a pending request, approves it with edited arguments by a short id, and refuses a second answer', async () => {
    expect((await cli('send', 'coder', 'log first')).code).toBe(0);
    const asked = await pending();
    const listed = await cli('approvals', 'list');
    expect(listed.stdout).toContain(asked.id);
    expect(listed.stdout).toMatch(/exec\s+coder\s+pending/);
    const shown = await cli('approvals', 'show', asked.id.slice(0, 8));
    expect(shown.stdout).toContain(`asked by   agent coder, session agent:coder:main, run ${asked.runId}, step 0`);
    expect(shown.stdout).toContain('because    agents.list[coder].tools.ask has "exec"');
    expect(shown.stdout).toContain(`"cwd":"${workspace}"`);
    expect(shown.stdout).toContain('(approve --args <json> runs it with other arguments)');
    const bad = await cli('approvals', 'approve', asked.id, '--args', '[1]');
    expect(bad).toMatchObject({ code: 1, stderr: expect.stringContaining('--args must be a JSON object') });
    const approved = await cli(
      'approvals',
      'approve',
      asked.id.slice(0, 8),
      '--by',
      'cli:ann',
      '--reason',
      'with a dry word',
      '--args',
      '{"command":"sh","args":["-c","echo edited >> log.txt"]}',
    );
    expect(approved).toMatchObject({ code: 0, stdout: `approved ${asked.id} (exec) by cli:ann\n` });
    await waitUntil('the command ran', () => existsSync(join(workspace, 'log.txt')), 15_000, 50);
    expect(readFileSync(join(workspace, 'log.txt'), 'utf8')).toBe('edited\n');
    const again = await cli('approvals', 'deny', asked.id);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`approval request ${asked.id} is approved already (by cli:ann): the first answer stands`);
    const answered = await cli('approvals', 'show', asked.id);
    expect(answered.stdout).toContain('answered   approved by cli:ann');
    expect(answered.stdout).toContain('ran with   {"command":"sh","args":["-c","echo edited >> log.txt"]}');
  }, 60_000);

  it('denies with a reason, and lists by status', async () => {
    expect((await cli('send', 'coder', 'log second')).code).toBe(0);
    const asked = await pending();
    expect((await cli('approvals', 'deny', asked.id, '--reason', 'not now')).stdout).toContain(`denied ${asked.id} (exec) by cli:`);
    const denied = JSON.parse((await cli('--json', 'approvals', 'list', '--status', 'denied')).stdout) as { approvals: ApprovalRecord[] };
    expect(denied.approvals.map((row) => [row.id, row.note])).toEqual([[asked.id, 'not now']]);
    expect((await cli('approvals', 'list')).stdout).toContain('(no pending approval requests)');
    const wrong = await cli('approvals', 'list', '--status', 'maybe');
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('status must be one of pending, approved, denied, expired, closed, all (default pending)');
  }, 60_000);

  it('budgets shows each cap with its spend', async () => {
    const day = new Date().toISOString().slice(0, 10);
    const out = await cli('budgets');
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(new RegExp(`agent:coder:${day}\\s+budgets\\.agents\\.coder\\s+\\d+ / 1000000 \\(\\d+%\\)`));
  }, 30_000);
});
