/**
 * The registry under hostile input: a `registry/<Name>.json` that is a symlink (out of the mailbox, or anywhere) is
 * not read and not listed, and neither is an inbox "folder" that is a link or a file; an unknown-recipient error names
 * only real participants.
 */
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MailboxLayout } from '../../src/mailbox/layout.js';
import {
  checkRecipient,
  isKnownRecipient,
  participants,
  postMessage,
  readRegistration,
  writeRegistration,
  type Registration,
} from '../../src/mailbox/registry.js';

const registration = (name: string) =>
  JSON.stringify({
    name,
    pid: process.pid,
    sessionId: 's',
    cwd: '/',
    model: 'm',
    startedAt: new Date().toISOString(),
    isHuman: false,
    session: { toolCalls: 0, tokens: 0, filesModified: [] },
    activity: { lastActivityAt: new Date().toISOString() },
  });

const setup = () => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'sb-registry-')));
  const layout = new MailboxLayout(join(base, 'mailbox'));
  mkdirSync(layout.registry, { recursive: true });
  mkdirSync(layout.inboxes, { recursive: true });
  mkdirSync(join(base, 'outside'));
  return { base, layout };
};

describe('mailbox registry', () => {
  it('our registration and a message posted (the CLI, a delivery) are never written through a linked registry/ or inbox/ folder', () => {
    const { base, layout } = setup();
    const outside = join(base, 'outside');
    rmSync(layout.registry, { recursive: true });
    symlinkSync(outside, layout.registry);
    expect(() => writeRegistration(layout, JSON.parse(registration('Ops')) as Registration)).toThrow(/is a symlink/);
    rmSync(layout.inboxes, { recursive: true });
    symlinkSync(outside, layout.inboxes);
    const message = { id: 'm', from: 'Ops', to: 'Peer', text: 'hi', timestamp: 'now', replyTo: null };
    expect(() => postMessage(layout, message, '1-aaaaaa.json')).toThrow(/is a symlink/);
    expect(readdirSync(outside)).toEqual([]);
  });

  it('a registration that is a symlink out of the mailbox is not read, not listed and not a known recipient', () => {
    const { base, layout } = setup();
    writeFileSync(join(layout.registry, 'Real.json'), registration('Real'));
    writeFileSync(join(base, 'outside', 'secret.json'), registration('Linked'));
    symlinkSync(join(base, 'outside', 'secret.json'), join(layout.registry, 'Linked.json'));
    expect(readRegistration(layout, 'Linked')).toBeUndefined();
    expect(readRegistration(layout, 'Real')).toMatchObject({ name: 'Real' });
    expect(participants(layout).map((participant) => participant.name)).toEqual(['Real']);
    expect(isKnownRecipient(layout, 'Linked')).toBe(false);
  });

  it('an unknown-recipient error lists only real registrations and real inbox folders as known', () => {
    const { base, layout } = setup();
    writeFileSync(join(layout.registry, 'Real.json'), registration('Real'));
    mkdirSync(layout.inbox('Script'));
    symlinkSync(join(base, 'outside'), layout.inbox('LinkedInbox'));
    writeFileSync(layout.inbox('AFile'), 'not a folder');
    mkdirSync(join(layout.registry, 'Folder.json'));
    symlinkSync(join(base, 'outside', 'missing.json'), join(layout.registry, 'Dangling.json'));
    expect(() => checkRecipient(layout, 'nobody')).toThrow(/\(known: Real, Script\)/);
    for (const name of ['LinkedInbox', 'AFile', 'Folder', 'Dangling']) expect(isKnownRecipient(layout, name)).toBe(false);
  });

  it('a registry folder that is a symlink is not read', () => {
    const { base } = setup();
    writeFileSync(join(base, 'outside', 'Far.json'), registration('Far'));
    const root = join(base, 'mailbox2');
    mkdirSync(root);
    symlinkSync(join(base, 'outside'), join(root, 'registry'));
    const linked = new MailboxLayout(root);
    expect(readRegistration(linked, 'Far')).toBeUndefined();
    expect(participants(linked)).toEqual([]);
    expect(isKnownRecipient(linked, 'Far')).toBe(false);
  });
});
