/**
 * What the mailbox writes into others' folders: a temporary file that a kill left between a delivery's write and its
 * rename is removed once it is stale (and nothing else is), and a delivery never writes through a link.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import type { MailboxService } from '../../src/mailbox/mailbox.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { linkInPlaceOf, registerPeer } from '../helpers/mailbox-files.js';
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

describe('mailbox deliveries', () => {
  it("a delivery's temporary file left in a peer's inbox by a kill is removed once stale; one being written and others' files are left alone", async () => {
    const { dir, config } = setup();
    registerPeer(dir, 'Peer');
    const inbox = join(dir, 'inbox', 'Peer');
    const hourAgo = new Date(Date.now() - 3600_000);
    // As writeTemp names them: `.<file>.<uuid>.tmp`.
    const stale = '.1764800000000-a1b2c3.json.0f8e2a4c-3b1d-4c5e-9f60-7a8b9c0d1e2f.tmp';
    const fresh = '.1764800000001-a1b2c4.json.1f8e2a4c-3b1d-4c5e-9f60-7a8b9c0d1e2f.tmp';
    const staleRegistration = '.Peer.json.2f8e2a4c-3b1d-4c5e-9f60-7a8b9c0d1e2f.tmp';
    // A shell peer's own temporary (docs/mailbox.md), old too: not ours.
    const theirs = '.1764800000002-zzzzzz.json.tmp';
    for (const name of [stale, fresh, theirs]) writeFileSync(join(inbox, name), '{"id": "partial');
    writeFileSync(join(dir, 'registry', staleRegistration), '{"name": "Pe');
    for (const path of [join(inbox, stale), join(inbox, theirs), join(dir, 'registry', staleRegistration)])
      utimesSync(path, hourAgo, hourAgo);
    gateway = await startTestGateway(config);
    await waitUntil('the stale temporaries are removed', () => !existsSync(join(inbox, stale)) || undefined);
    expect(readdirSync(inbox).sort()).toEqual([theirs, fresh].sort());
    expect(existsSync(join(dir, 'registry', staleRegistration))).toBe(false);
  });

  it('a delivery does not write through a link: with the inbox folder made a symlink, the message waits in the outbox', async () => {
    const { root, dir, config } = setup();
    registerPeer(dir, 'Reader');
    let mailbox!: MailboxService;
    gateway = await startTestGateway(config, {}, undefined, { onMailbox: (made) => (mailbox = made) });
    const outside = join(root, 'outside');
    mkdirSync(join(outside, 'Reader'), { recursive: true });
    await linkInPlaceOf(join(dir, 'inbox'), outside);
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
