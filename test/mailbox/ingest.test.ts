/**
 * The ingest of one inbox against a gateway it is given: accepted messages' files are deleted only once a sync has
 * covered their inputs, one sync for the files taken together, while the next messages are taken; a failed sync keeps
 * them, to be read again.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/gateway/gateway.js';
import { InboxIngest } from '../../src/mailbox/ingest.js';
import { MailboxLayout, PROCESSING } from '../../src/mailbox/layout.js';
import type { MailMessage } from '../../src/mailbox/layout.js';
import { waitUntil } from '../helpers/wait.js';

let ingest: InboxIngest | undefined;
afterEach(async () => {
  await ingest?.stop();
  ingest = undefined;
});

/** An ingest of inbox "Ops" whose `durable` resolves or rejects when the test says; `notYet` is not taken at its first try. */
function setup(notYet?: string) {
  const layout = new MailboxLayout(mkdtempSync(join(tmpdir(), 'sb-ingest-')));
  const accepted: string[] = [];
  const syncs: { release: (error?: Error) => void; covered: string[] }[] = [];
  ingest = new InboxIngest({
    layout,
    name: 'Ops',
    maxFileBytes: 1_000_000,
    partialGraceMs: 200,
    // A file that does not parse yet holds back the files after it for 100 ms by default: long enough here for a slow run.
    partialHoldMs: 2000,
    scanIntervalMs: 50,
    clock: systemClock,
    accept: async (message: MailMessage) => {
      if (message.id === notYet) {
        notYet = undefined;
        throw new Error('the lane of this session is full; try again later');
      }
      accepted.push(message.id);
    },
    durable: () =>
      new Promise<void>((resolve, reject) => {
        syncs.push({ release: (error) => (error ? reject(error) : resolve()), covered: [...accepted] });
      }),
    log: () => {},
  });
  const inbox = layout.inbox('Ops');
  /** A message file, whole at once (a temporary name, then a rename), named `name` when given. */
  const post = (id: string, name = `${Date.now()}-${id}.json`) => {
    const message = { id, from: 'Writer', to: 'Ops', text: `text of ${id}`, timestamp: new Date().toISOString(), replyTo: null };
    writeFileSync(join(inbox, `.${name}.tmp`), JSON.stringify(message));
    renameSync(join(inbox, `.${name}.tmp`), join(inbox, name));
  };
  const processing = () => readdirSync(join(inbox, PROCESSING)).filter((file) => file.endsWith('.json'));
  const waitingInInbox = () => readdirSync(inbox).filter((file) => file.endsWith('.json'));
  /** Lets every sync asked for end, until the files in `.processing/` are deleted. */
  const releaseAll = () =>
    waitUntil('the files are deleted', () => {
      for (const sync of syncs) sync.release();
      return processing().length === 0 || undefined;
    });
  return { inbox, accepted, syncs, post, processing, waitingInInbox, releaseAll };
}

describe('mailbox ingest', () => {
  it('deletes a file only after a sync that began after its input was accepted, one sync for the files taken together', async () => {
    const { inbox, accepted, syncs, post, processing } = setup();
    await ingest!.start();
    for (const id of ['a', 'b', 'c']) post(id);
    await waitUntil('the sync is asked for', () => syncs.length === 1 || undefined);
    expect(accepted).toEqual(['a', 'b', 'c']);
    expect(syncs[0]!.covered).toEqual(['a', 'b', 'c']);
    // Accepted, not yet durable: the files are kept.
    expect(processing()).toHaveLength(3);
    syncs[0]!.release();
    await waitUntil('the files are deleted', () => processing().length === 0 || undefined);
    expect(readdirSync(inbox).filter((file) => file.endsWith('.json'))).toEqual([]);
    expect(readdirSync(join(inbox, '.rejected'))).toEqual([]);
  });

  it("takes a message that arrives while the last one's sync runs, and does not take that one again", async () => {
    const { accepted, syncs, post, processing, releaseAll } = setup();
    await ingest!.start();
    post('a');
    await waitUntil('a waits for its sync', () => syncs.length === 1 || undefined);
    post('b');
    await waitUntil("b is accepted before a's sync has ended", () => accepted.includes('b') || undefined);
    // a's file is kept until its sync ends, and the passes that ran meanwhile (a scan every 50 ms) left it alone.
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(accepted).toEqual(['a', 'b']);
    expect(processing()).toHaveLength(2);
    await releaseAll();
    expect(accepted).toEqual(['a', 'b']);
  });

  it('a file with the name of one still in .processing waits in the inbox instead of replacing it', async () => {
    const { accepted, syncs, post, processing, waitingInInbox } = setup();
    await ingest!.start();
    post('a', 'msg.json');
    await waitUntil('a waits for its sync', () => syncs.length === 1 || undefined);
    // A writer that always uses one name: a claim by rename would replace a's file, and a's release would delete b's.
    post('b', 'msg.json');
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(accepted).toEqual(['a']);
    expect(waitingInInbox()).toEqual(['msg.json']);
    syncs[0]!.release();
    await waitUntil('b is taken once a is done', () => syncs.length === 2 || undefined);
    expect(accepted).toEqual(['a', 'b']);
    expect(processing()).toEqual(['msg.json']);
    syncs[1]!.release();
    await waitUntil('the file is deleted', () => processing().length === 0 || undefined);
    expect(waitingInInbox()).toEqual([]);
  });

  it("a sender's message that the gateway could not take yet holds back that sender's later ones, in later passes too", async () => {
    const { accepted, post, processing, releaseAll } = setup('a');
    await ingest!.start();
    post('a', '1-a.json');
    await waitUntil('a was tried', () => processing().length === 1 || undefined);
    await new Promise((resolve) => setTimeout(resolve, 100));
    // b comes after a's failed try, in a pass of its own (a scan every 50 ms): it must not overtake a.
    post('b', '2-b.json');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(accepted).toEqual([]);
    await waitUntil('a is tried again, with b after it', () => accepted.length === 2 || undefined, 5000);
    expect(accepted).toEqual(['a', 'b']);
    await releaseAll();
  });

  it("a file caught between its writer's open and write is read again within milliseconds, and the files after it wait", async () => {
    const { inbox, accepted, processing, releaseAll } = setup();
    await ingest!.start();
    // As pi-messenger writes: in place, so the file exists, empty, before its text is written.
    writeFileSync(join(inbox, '1-a.json'), '');
    const b = { id: 'b', from: 'Other', to: 'Ops', text: 'text of b', timestamp: new Date().toISOString(), replyTo: null };
    writeFileSync(join(inbox, '.2-b.json.tmp'), JSON.stringify(b));
    renameSync(join(inbox, '.2-b.json.tmp'), join(inbox, '2-b.json'));
    await waitUntil('both are claimed', () => processing().length === 2 || undefined);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(accepted).toEqual([]);
    // The writer's write lands in the file it opened, which is in .processing/ by now.
    writeFileSync(join(inbox, '.processing', '1-a.json'), JSON.stringify({ ...b, id: 'a', from: 'Writer', text: 'text of a' }));
    const written = Date.now();
    await waitUntil('both are accepted', () => accepted.length === 2 || undefined);
    // Read again as its age doubles (1 s before, when the next message went first).
    expect(Date.now() - written).toBeLessThan(900);
    expect(accepted).toEqual(['a', 'b']);
    await releaseAll();
  });

  it('forgets a file that its writer took away while it did not parse yet', async () => {
    const { inbox } = setup();
    await ingest!.start();
    writeFileSync(join(inbox, '1-a.json'), '');
    // What the ingest keeps of files (private maps, read here to show that they do not grow).
    const kept = ingest as unknown as { retryAt: Map<string, number>; partialSince: Map<string, number> };
    const state = () => [kept.retryAt.size, kept.partialSince.size];
    await waitUntil('seen unparsed', () => state()[1] === 1 || undefined);
    rmSync(join(inbox, '.processing', '1-a.json'));
    // Past the grace period (200 ms) and a scan (every 50 ms), nothing of it is kept.
    await waitUntil('forgotten', () => (state()[0] === 0 && state()[1] === 0) || undefined, 3000);
  });

  it('a failed sync keeps the files; they are read again and deleted after a sync that works', async () => {
    const { accepted, syncs, post, processing } = setup();
    await ingest!.start();
    post('a');
    await waitUntil('the first sync is asked for', () => syncs.length === 1 || undefined);
    syncs[0]!.release(new Error('fdatasync of the WAL failed (EIO)'));
    // Read again after the retry delay: accepted again (its key finds the same input), then synced.
    await waitUntil('a second sync is asked for', () => syncs.length === 2 || undefined, 5000);
    expect(processing()).toHaveLength(1);
    expect(accepted).toEqual(['a', 'a']);
    syncs[1]!.release();
    await waitUntil('the file is deleted', () => processing().length === 0 || undefined);
  });
});

describe('mailbox ingest: one file never stops a pass', () => {
  it('a Unix socket and a FIFO named *.json are rejected with the reason, without blocking, and the messages after them are taken', async () => {
    const { inbox, accepted, post, releaseAll } = setup();
    const rejected = join(inbox, '.rejected');
    mkdirSync(join(inbox, PROCESSING), { recursive: true });
    // One left in .processing/ by a gateway that stopped on it, one arriving in the inbox.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(join(inbox, PROCESSING, '1-socket.json'), resolve));
    try {
      execFileSync('mkfifo', [join(inbox, '2-fifo.json')]);
      post('a', '3-a.json');
      await ingest!.start();
      await waitUntil('a is taken', () => accepted.includes('a') || undefined);
      await waitUntil('both are rejected', () => readdirSync(rejected).filter((file) => file.endsWith('.error')).length === 2 || undefined);
      const reason = (file: string) =>
        readFileSync(join(rejected, `${file}.error`), 'utf8')
          .replace(/^\S+ /, '')
          .trim();
      expect(reason('1-socket.json')).toBe('the file is a socket; the mailbox reads only regular files');
      expect(reason('2-fifo.json')).toBe('the file is a FIFO; the mailbox reads only regular files');
      post('b', '4-b.json');
      await waitUntil('b is taken after them', () => accepted.includes('b') || undefined);
      await releaseAll();
    } finally {
      server.close();
    }
  });

  it.skipIf(process.getuid?.() === 0)(
    'a file the gateway may not read is rejected with the reason, and the messages after it are taken',
    async () => {
      const { inbox, accepted, post, releaseAll } = setup();
      mkdirSync(inbox, { recursive: true });
      post('x', '1-x.json');
      chmodSync(join(inbox, '1-x.json'), 0o000);
      post('a', '2-a.json');
      await ingest!.start();
      await waitUntil('a is taken', () => accepted.includes('a') || undefined);
      const error = join(inbox, '.rejected', '1-x.json.error');
      await waitUntil('x is rejected', () => existsSync(error) || undefined);
      expect(readFileSync(error, 'utf8')).toMatch(
        /the file cannot be opened \(EACCES\); the mailbox reads only regular files that the gateway's user may read/,
      );
      await releaseAll();
    },
  );

  it('a file whose name is at the file-name limit is rejected with its reason, twice over, and the messages after it are taken', async () => {
    const { inbox, accepted, post, releaseAll } = setup();
    const rejected = join(inbox, '.rejected');
    // 255 bytes, the limit: the name with `.error`, or with a counter, would be longer.
    const long = `${'é'.repeat(100)}${'x'.repeat(50)}.json`;
    expect(Buffer.byteLength(long)).toBe(255);
    const reasons = () =>
      readdirSync(rejected)
        .filter((file) => file.endsWith('.error'))
        .sort()
        .map((file) => ({ file, reason: readFileSync(join(rejected, file), 'utf8').replace(/^\S+ /, '').trim() }));
    mkdirSync(inbox, { recursive: true });
    writeFileSync(join(inbox, long), '{"not": "a message"}');
    await ingest!.start();
    await waitUntil('rejected once', () => reasons().length === 1 || undefined);
    // The same name again (a writer that reuses one name).
    writeFileSync(join(inbox, long), '[]');
    post('a', '9-a.json');
    await waitUntil('a is taken', () => accepted.includes('a') || undefined);
    await waitUntil('rejected twice', () => reasons().length === 2 || undefined);
    const files = readdirSync(rejected).filter((file) => !file.endsWith('.error'));
    expect(files).toHaveLength(2);
    for (const file of readdirSync(rejected)) expect(Buffer.byteLength(file)).toBeLessThanOrEqual(255);
    for (const { file, reason } of reasons()) {
      expect(files).toContain(file.slice(0, -'.error'.length));
      expect(reason).toMatch(
        new RegExp(
          `^(id: Invalid input: expected string, received undefined|Invalid input: expected object, received array) \\(arrived as ${long}\\)$`,
        ),
      );
    }
    expect(readdirSync(join(inbox, PROCESSING))).toEqual(['9-a.json']);
    await releaseAll();
  });
});
