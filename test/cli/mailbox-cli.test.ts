/**
 * `switchboard mailbox list|send|tail|rejected` beside a real gateway process: a message sent from the command line
 * is answered into the sender's inbox, everyone is listed with their state, an unknown recipient is refused naming
 * the known ones, and a refused file is shown with its reason.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliWith, gatewayForSuite, tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const { dir, configPath } = tempConfig(`{
  mailbox: { enabled: true, dir: "./shared", scanIntervalMs: 100, partialGraceMs: 200 },
  agents: { list: [{ id: "ops", model: "scripted/m", mailbox: { name: "Ops" } }] },
  models: { providers: { scripted: { type: "scripted", models: { m: { rules: [{ reply: "noted: {{input}}" }] } } } } },
}`);
const cli = cliWith(configPath);
const suite = gatewayForSuite(configPath);

describe('switchboard mailbox', () => {
  it('send, tail, list and rejected work on the shared folder itself', async () => {
    expect(suite.gw.url).toMatch(/^http/);
    const sent = await cli('mailbox', 'send', 'Ops', 'the', 'build', 'is', 'green', '--from', 'me');
    expect(sent.stdout).toMatch(new RegExp(`^sent [0-9a-f-]{36} to Ops \\(${dir}/shared/inbox/Ops/\\d{13}-[0-9a-z]{6}\\.json\\)\\n$`));
    const id = sent.stdout.split(' ')[1];
    const reply = await waitUntil('the reply', async () => (await cli('mailbox', 'tail', 'me', '--once')).stdout, 10_000);
    expect(reply).toMatch(new RegExp(`^\\S+Z  Ops -> me \\(re ${id}\\): noted: the build is green\\n$`));
    const listed = await cli('mailbox', 'list');
    expect(listed.stdout).toMatch(/^NAME +STATUS +WAITING +RESERVATIONS +ACTIVE\n/);
    expect(listed.stdout).toMatch(/\nOps +alive +0 +- +\S.*\n/);
    expect(listed.stdout).toMatch(/\nme +inbox only +1 +- +-\n/);
    // --consume takes it away, as its owner would.
    expect((await cli('mailbox', 'tail', 'me', '--once', '--consume')).stdout).toContain('noted: the build is green');
    expect((await cli('mailbox', 'tail', 'me', '--once')).stdout).toBe('');
    const unknown = await cli('mailbox', 'send', 'Nobody', 'hi');
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toBe(
      `switchboard: no one named "Nobody" in the mailbox ${dir}/shared (known: Ops, me); a recipient registers or has an inbox folder\n`,
    );
    writeFileSync(join(dir, 'shared', 'inbox', 'Ops', '1-broken.json'), '{"id": 1');
    const rejected = await waitUntil(
      'the rejection',
      async () => (await cli('mailbox', 'rejected')).stdout.match(/^Ops\/1-broken\.json .+/)?.[0],
      10_000,
    );
    expect(rejected).toMatch(/^Ops\/1-broken\.json {2}\S+ not JSON \(.+\), and unchanged for \d+ ms \(mailbox\.partialGraceMs\)$/);
  });
});
