/**
 * The ingest of one inbox against a gateway it is given: accepted messages' files are deleted only once a sync has
 * covered their inputs, one sync for the files taken together; a failed sync keeps them, to be read again.
 */
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { InboxIngest } from '../../src/mailbox/ingest.js';
import { MailboxLayout, PROCESSING } from '../../src/mailbox/layout.js';
import type { MailMessage } from '../../src/mailbox/layout.js';
import { waitUntil } from '../helpers/wait.js';

let ingest: InboxIngest | undefined;
afterEach(async () => {
  await ingest?.stop();
  ingest = undefined;
});

/** An ingest of inbox "Ops" whose `durable` resolves or rejects when the test says. */
function setup() {
  const layout = new MailboxLayout(mkdtempSync(join(tmpdir(), 'sb-ingest-')));
  const accepted: string[] = [];
  const syncs: { release: (error?: Error) => void; covered: string[] }[] = [];
  ingest = new InboxIngest({
    layout,
    name: 'Ops',
    maxFileBytes: 1_000_000,
    partialGraceMs: 200,
    scanIntervalMs: 50,
    accept: async (message: MailMessage) => void accepted.push(message.id),
    durable: () =>
      new Promise<void>((resolve, reject) => {
        syncs.push({ release: (error) => (error ? reject(error) : resolve()), covered: [...accepted] });
      }),
    log: () => {},
  });
  const inbox = layout.inbox('Ops');
  const post = (id: string) =>
    writeFileSync(
      join(inbox, `${Date.now()}-${id}.json`),
      JSON.stringify({ id, from: 'Writer', to: 'Ops', text: `text of ${id}`, timestamp: new Date().toISOString(), replyTo: null }),
    );
  const processing = () => readdirSync(join(inbox, PROCESSING)).filter((file) => file.endsWith('.json'));
  return { inbox, accepted, syncs, post, processing };
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
