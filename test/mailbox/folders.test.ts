/**
 * The mailbox against a shared folder that others write: a folder of an inbox replaced by a link (after start, or
 * before a start) is never followed; the inbox is disabled with a log line saying what is wrong and how to fix it,
 * the gateway starts and runs on, and the inbox is taken up again once fixed.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { type Gateway, systemClock } from '../../src/gateway/gateway.js';
import { InboxIngest } from '../../src/mailbox/ingest.js';
import { MailboxLayout, type MailMessage } from '../../src/mailbox/layout.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { stopTestGateway } from '../helpers/gateway.js';
import { linkInPlaceOf } from '../helpers/mailbox-files.js';
import { waitUntil } from '../helpers/wait.js';

let ingest: InboxIngest | undefined;
let gateway: Gateway | undefined;
afterEach(async () => {
  await ingest?.stop();
  ingest = undefined;
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

const message = (id: string, to = 'Ops', from = 'Writer') =>
  JSON.stringify({ id, from, to, text: `text of ${id}`, timestamp: new Date().toISOString(), replyTo: null });

/** A running ingest of inbox "Ops", and a folder outside the mailbox holding a message and a secret. */
async function started() {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sb-folders-')));
  const layout = new MailboxLayout(join(root, 'mailbox'));
  const outside = join(root, 'outside');
  mkdirSync(outside);
  writeFileSync(join(outside, '1-x.json'), message('outside'));
  writeFileSync(join(outside, '2-secret.json'), 'password=hunter2');
  const accepted: string[] = [];
  const logs: string[] = [];
  ingest = new InboxIngest({
    layout,
    name: 'Ops',
    maxFileBytes: 1_000_000,
    partialGraceMs: 0,
    scanIntervalMs: 50,
    clock: systemClock,
    accept: async (taken: MailMessage) => void accepted.push(taken.id),
    durable: async () => {},
    log: (_level, line) => logs.push(line),
  });
  await ingest.start();
  await ingest.settle();
  const inbox = layout.inbox('Ops');
  const outsideFiles = () => readdirSync(outside).sort();
  return { root, layout, inbox, outside, accepted, logs, outsideFiles };
}

describe('mailbox folders', () => {
  it('a .processing folder made a symlink after start is not followed: nothing outside is read, deleted or moved, and the inbox resumes once it is fixed', async () => {
    const { inbox, outside, accepted, logs, outsideFiles } = await started();
    await linkInPlaceOf(join(inbox, '.processing'), outside);
    writeFileSync(join(inbox, '3-in.json'), message('inside'));
    await ingest!.settle();
    await ingest!.settle();
    expect(accepted).toEqual([]);
    expect(outsideFiles()).toEqual(['1-x.json', '2-secret.json']);
    expect(readdirSync(join(inbox, '.rejected'))).toEqual([]);
    expect(readdirSync(inbox).filter((file) => file.endsWith('.json'))).toEqual(['3-in.json']);
    expect(logs.filter((line) => line.includes('inbox disabled'))).toEqual([
      `mailbox Ops: inbox disabled: ${join(inbox, '.processing')} is a symlink, and the mailbox opens nothing through a link: remove it (the gateway makes a real folder in its place); the inbox is taken up again within mailbox.scanIntervalMs once it is fixed, and the gateway's other inboxes and fronts run on`,
    ]);
    rmSync(join(inbox, '.processing'));
    await waitUntil('the message is taken once the link is gone', () => accepted.includes('inside') || undefined);
    expect(accepted).toEqual(['inside']);
    expect(outsideFiles()).toEqual(['1-x.json', '2-secret.json']);
    expect(logs.at(-1)).toBe("mailbox Ops: the inbox's folders are real folders again; taking messages");
  });

  it('a .rejected folder made a symlink after start receives nothing: a bad file stays where it is', async () => {
    const { inbox, outside, accepted, logs, outsideFiles } = await started();
    await linkInPlaceOf(join(inbox, '.rejected'), outside);
    writeFileSync(join(inbox, '3-bad.json'), '{"secret": "hunter2"}');
    writeFileSync(join(inbox, '4-in.json'), message('inside'));
    await ingest!.settle();
    await ingest!.settle();
    expect(outsideFiles()).toEqual(['1-x.json', '2-secret.json']);
    expect(accepted).toEqual([]);
    expect(logs.some((line) => line.includes(`inbox disabled: ${join(inbox, '.rejected')} is a symlink`))).toBe(true);
  });

  it('an inbox folder made a symlink after start is not followed: a message in the folder it points to is not taken', async () => {
    const { inbox, outside, accepted, logs, outsideFiles } = await started();
    // The folder it points to looks like an inbox, with the gateway's own folders in it.
    mkdirSync(join(outside, '.processing'));
    mkdirSync(join(outside, '.rejected'));
    await linkInPlaceOf(inbox, outside);
    await ingest!.settle();
    await ingest!.settle();
    expect(accepted).toEqual([]);
    expect(outsideFiles()).toEqual(['.processing', '.rejected', '1-x.json', '2-secret.json']);
    expect(readdirSync(join(outside, '.processing'))).toEqual([]);
    expect(logs.some((line) => line.includes(`inbox disabled: ${inbox} is a symlink`))).toBe(true);
  });

  it('a gateway started with a symlinked .processing starts, says why that inbox is disabled, and its other inboxes and fronts work', async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'sb-folders-')));
    const dir = join(root, 'mailbox');
    const outside = join(root, 'outside');
    mkdirSync(outside);
    writeFileSync(join(outside, '1-x.json'), message('outside'));
    mkdirSync(join(dir, 'inbox', 'Ops'), { recursive: true });
    symlinkSync(outside, join(dir, 'inbox', 'Ops', '.processing'));
    // A peer as a shell script is: an inbox folder, no registration.
    mkdirSync(join(dir, 'inbox', 'Peer'), { recursive: true });
    const { config } = parseConfigText(
      `{
        agents: { list: [
          { id: "ops", model: "scripted/m", mailbox: { name: "Ops" } },
          { id: "dev", model: "scripted/m" },
        ] },
        mailbox: { enabled: true, dir: "${dir}", scanIntervalMs: 100 },
        models: { providers: { scripted: { type: "scripted", models: { m: { rules: [{ reply: "got: {{input}}" }] } } } } },
      }`,
      '/test/switchboard.json5',
      {},
    );
    const logs: string[] = [];
    gateway = await startGateway({
      config,
      store: await SqliteStore.open({ path: ':memory:' }),
      gatewayId: 'gw-test',
      log: (_level, line) => logs.push(line),
    });
    await waitUntil('the inbox is disabled', () => logs.find((line) => line.includes('mailbox Ops: inbox disabled')));
    // Another inbox of the same gateway works.
    writeFileSync(join(dir, 'inbox', 'dev', '1-hi.json'), message('hi', 'dev', 'Peer'));
    const reply = await waitUntil(
      'the reply in the peer inbox',
      () => readdirSync(join(dir, 'inbox', 'Peer')).find((file) => file.endsWith('.json')),
      10_000,
    );
    expect(JSON.parse(readFileSync(join(dir, 'inbox', 'Peer', reply), 'utf8'))).toMatchObject({ text: 'got: text of hi' });
    // Another front reaches the agent behind the disabled inbox.
    const sent = await gateway.send({ target: 'ops', message: 'ping' });
    expect(await gateway.waitForInput(sent.input.id, 10_000)).toMatchObject({ reply: 'got: ping' });
    expect(readdirSync(outside)).toEqual(['1-x.json']);
    expect(existsSync(join(dir, 'registry', 'Ops.json'))).toBe(true);
  });
});

describe('mailbox time', () => {
  it("files are judged by the local machine's clock, not the store's: a registration made under a store clock an hour ahead says when it really started", async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'sb-mailbox-clock-')));
    const { config } = parseConfigText(
      `{
        agents: { list: [{ id: "ops", model: "scripted/m", mailbox: { name: "Ops" } }] },
        mailbox: { enabled: true, dir: "${dir}", scanIntervalMs: 100 },
        models: { providers: { scripted: { type: "scripted", models: { m: { rules: [{ reply: "ok" }] } } } } },
      }`,
      '/test/switchboard.json5',
      {},
    );
    const before = Date.now();
    // The store's clock is the database's on PostgreSQL: another host's, possibly far from this one's.
    const storeClock = { now: () => Date.now() + 3_600_000 };
    gateway = await startGateway({ config, store: await SqliteStore.open({ path: ':memory:' }), gatewayId: 'gw-test', clock: storeClock });
    const registration = await waitUntil('the registration', () => {
      const path = join(dir, 'registry', 'Ops.json');
      return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as { startedAt: string }) : undefined;
    });
    const startedAt = Date.parse(registration.startedAt);
    expect(startedAt).toBeGreaterThanOrEqual(before - 1000);
    expect(startedAt).toBeLessThanOrEqual(Date.now() + 1000);
  });
});
