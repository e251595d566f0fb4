/**
 * What the mailbox writes into others' folders: a delivery never writes through a link.
 */
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import type { MailboxService } from '../../src/mailbox/mailbox.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

function setup() {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sb-deliveries-')));
  const dir = join(root, 'mailbox');
  const config = `{
    agents: { list: [{ id: "ops", model: "scripted/m", mailbox: { name: "Ops" } }] },
    mailbox: { enabled: true, dir: "${dir}", scanIntervalMs: 100 },
    models: { providers: { scripted: { type: "scripted", models: { m: { rules: [{ reply: "got: {{input}}" }] } } } } },
  }`;
  return { root, dir, config };
}

/** A peer that registered (as pi-messenger does) and has an inbox folder. */
function registerPeer(dir: string, name: string): void {
  mkdirSync(join(dir, 'registry'), { recursive: true });
  mkdirSync(join(dir, 'inbox', name), { recursive: true });
  const now = new Date().toISOString();
  writeFileSync(
    join(dir, 'registry', `${name}.json`),
    JSON.stringify({
      name,
      pid: process.pid,
      sessionId: 's1',
      cwd: '/tmp',
      model: 'pi',
      startedAt: now,
      isHuman: false,
      session: { toolCalls: 0, tokens: 0, filesModified: [] },
      activity: { lastActivityAt: now },
    }),
  );
}

describe('mailbox deliveries', () => {
  it('a delivery does not write through a link: with the inbox folder made a symlink, the message waits in the outbox', async () => {
    const { root, dir, config } = setup();
    registerPeer(dir, 'Reader');
    let mailbox!: MailboxService;
    gateway = await startTestGateway(config, {}, undefined, { onMailbox: (made) => (mailbox = made) });
    const outside = join(root, 'outside');
    mkdirSync(join(outside, 'Reader'), { recursive: true });
    renameSync(join(dir, 'inbox'), join(root, 'inbox.real'));
    symlinkSync(outside, join(dir, 'inbox'));
    await mailbox.send({ from: 'Ops', to: 'Reader', text: 'secret plans', replyTo: null }, 'k-1');
    const row = await waitUntil('the delivery is refused', async () =>
      (await gateway!.store.outbox.list()).find((candidate) => candidate.lastError?.includes('is a symlink')),
    );
    expect(row.lastError).toBe(
      `${join(dir, 'inbox')} is a symlink, and the mailbox opens nothing through a link: remove it (the gateway makes a real folder in its place)`,
    );
    expect(row.status).toBe('pending');
    expect(readdirSync(join(outside, 'Reader'))).toEqual([]);
  });
});
