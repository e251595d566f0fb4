/**
 * Issue 31's benchmark: a mailbox hop (an outside process's write until the message is a committed input) against a
 * raw hop in the same run (temporary file, rename, fs.watch, read and parse; and the same plus one durable SQLite
 * insert, the least a durable hop costs), one at a time, alternating; the same hop in a steady stream of messages; then
 * a burst of 10,000 messages written at once: messages per second until the last is an input, and how many were lost.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, watch, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { startGateway } from '../src/app.js';
import { parseConfigText } from '../src/config/load.js';
import { MailboxService } from '../src/mailbox/mailbox.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { percentile } from './judged.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'sb-bench-mailbox-'));

/** How a writer that does it right puts a file in an inbox: a temporary name, then a rename. Message `id` is `m-<key>`. */
function post(inbox: string, key: string, i: number, to: string): void {
  const name = `${Date.now()}-${i.toString(36).padStart(6, '0').slice(-6)}.json`;
  const message = { id: `m-${key}`, from: 'Writer', to, text: `message ${key}`, timestamp: new Date().toISOString(), replyTo: null };
  writeFileSync(join(inbox, `.${name}.tmp`), JSON.stringify(message));
  renameSync(join(inbox, `.${name}.tmp`), join(inbox, name));
}

/** The raw hop: the watcher sees the file, reads and parses it (and, `durable`, inserts it with synchronous=FULL). */
async function rawHops(count: number, durable: boolean): Promise<number[]> {
  const dir = tmp();
  const inbox = join(dir, 'inbox');
  mkdirSync(inbox);
  const db = new BetterSqlite3(join(dir, 'raw.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE inputs (key TEXT PRIMARY KEY, text TEXT NOT NULL)');
  const insert = db.prepare('INSERT OR IGNORE INTO inputs (key, text) VALUES (?, ?)');
  let waiting: ((at: number) => void) | undefined;
  const watcher = watch(inbox, () => {
    for (const file of readdirSync(inbox).filter((name) => name.endsWith('.json') && !name.startsWith('.'))) {
      const parsed = JSON.parse(readFileSync(join(inbox, file), 'utf8')) as { id: string; text: string };
      if (durable) insert.run(parsed.id, parsed.text);
      renameSync(join(inbox, file), join(dir, file));
      waiting?.(performance.now());
    }
  });
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const done = new Promise<number>((resolve) => (waiting = resolve));
    const start = performance.now();
    post(inbox, String(i), i, 'raw');
    times.push((await done) - start);
  }
  watcher.close();
  db.close();
  return times;
}

/**
 * A gateway with one agent in the mailbox; `listen` hears each message id when its input is committed, and `listenSynced`
 * when a sync covering it has ended (the ingest deletes its file then).
 */
async function mailboxGateway(mode: 'followup' | 'notify') {
  const dir = tmp();
  const text = `{ messages: { queue: { byChannel: { mailbox: "${mode}" } } }, agents: { list: [{ id: "ops", model: "scripted/m", mailbox: { name: "Ops" } }] },
    models: { providers: { scripted: { type: "scripted", models: { m: { rules: [{ reply: "ok" }] } } } } } }`;
  const { config } = parseConfigText(text, join(dir, 'switchboard.json5'), {});
  const store = await SqliteStore.open({ path: join(dir, 'store.db') });
  const gateway = await startGateway({ config, store, gatewayId: 'bench' });
  // The gateway's own mailbox is off; this one is the same code, with its accepts timed.
  const listeners = new Set<(id: string, at: number) => void>();
  const syncedListeners = new Set<(id: string, at: number) => void>();
  let unsynced: string[] = [];
  /** Each message's input, so that a hop can wait for everything the message started (its run, that run's sync). */
  const inputs = new Map<string, string>();
  const mailbox = new MailboxService({
    config: { ...config, mailbox: { ...config.mailbox, enabled: true, dir: join(dir, 'mailbox'), scanIntervalMs: 1000 } },
    dataDir: dir,
    store: store.mailbox,
    clock: { now: () => Date.now() },
    fileClock: { now: () => Date.now() },
    gatewayId: 'bench',
    api: () => ({
      accept: async (input, opening) => {
        const answer = await gateway.accept(input, opening);
        const messageId = input.provenance.messageId ?? '';
        inputs.set(messageId, answer.input.id);
        for (const listener of listeners) listener(messageId, performance.now());
        unsynced.push(messageId);
        return answer;
      },
      durable: async () => {
        const covered = unsynced;
        unsynced = [];
        await gateway.durable();
        const at = performance.now();
        for (const id of covered) for (const listener of syncedListeners) listener(id, at);
      },
    }),
    enqueue: (row) => gateway.enqueueDelivery(row),
    log: () => {},
  });
  await mailbox.start();
  return {
    inbox: join(dir, 'mailbox', 'inbox', 'Ops'),
    mailbox,
    listen(listener: (id: string, at: number) => void) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    listenSynced(listener: (id: string, at: number) => void) {
      syncedListeners.add(listener);
      return () => syncedListeners.delete(listener);
    },
    /** Resolves once the message's input has settled (with `followup`, its run committed) and that is synced. */
    async quiet(messageId: string) {
      const inputId = inputs.get(messageId);
      inputs.delete(messageId);
      if (mode === 'followup' && inputId) await gateway.waitForInput(inputId, 60_000);
      await gateway.durable();
    },
    async stop() {
      await mailbox.stop();
      await gateway.stop();
      await store.close();
    },
  };
}

/**
 * One message at a time: the time until its input is committed, and until a sync covers it (its file is deleted). The
 * next message is written once the gateway is quiet again (the message's run, with `followup`, has committed and is
 * synced): a sync still under way makes creating the next file wait on the file system's journal, which is no part of
 * the hop (the raw hops that follow measured 0.9 ms instead of 0.1 while the last run's sync went on).
 */
async function mailboxHops(
  gateway: Awaited<ReturnType<typeof mailboxGateway>>,
  from: number,
  count: number,
): Promise<{ committed: number[]; synced: number[] }> {
  const committed: number[] = [];
  const synced: number[] = [];
  const heard = (listen: typeof gateway.listen, id: string) =>
    new Promise<number>((resolve) => {
      const stop = listen((heardId, at) => {
        if (heardId !== id) return;
        stop();
        resolve(at);
      });
    });
  for (let i = from; i < from + count; i++) {
    const done = heard(gateway.listen, `m-${i}`);
    const durable = heard(gateway.listenSynced, `m-${i}`);
    const start = performance.now();
    post(gateway.inbox, String(i), i, 'Ops');
    committed.push((await done) - start);
    synced.push((await durable) - start);
    await gateway.quiet(`m-${i}`);
  }
  return { committed, synced };
}

/**
 * A steady stream, one message every `gapMs` (between the time a hop takes and the time its sync takes): the time from
 * each write until its input is committed, while the messages before it are still being synced or answered.
 */
async function streamHops(
  gateway: Awaited<ReturnType<typeof mailboxGateway>>,
  tag: string,
  count: number,
  gapMs: number,
): Promise<number[]> {
  const sent = new Map<string, number>();
  const hops: number[] = [];
  const stop = gateway.listen((id, at) => {
    const start = sent.get(id);
    if (start === undefined) return;
    sent.delete(id);
    hops.push(at - start);
  });
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    sent.set(`m-${tag}${i}`, start);
    post(gateway.inbox, `${tag}${i}`, i, 'Ops');
    while (performance.now() - start < gapMs) await new Promise((resolve) => setImmediate(resolve));
  }
  while (sent.size > 0) await new Promise((resolve) => setTimeout(resolve, 5));
  stop();
  return hops;
}

export interface MailboxBench {
  hop: { p50: number; p99: number };
  /** Until a sync covers the input and its file may be deleted. */
  hopSynced: { p50: number; p99: number };
  raw: { p50: number; p99: number };
  rawDurable: { p50: number; p99: number };
  /** One message every 2 ms. */
  stream: { p50: number; p99: number };
  burst: { messages: number; perSec: number; lost: number; twice: number; leftOver: number };
}

/** `followup`: the agent answers every message (a run each); `notify`: the messages are only stored (the ingest alone). */
export async function mailboxBench(hops: number, burst: number, mode: 'followup' | 'notify'): Promise<MailboxBench> {
  // What the section before wrote is flushed first: while the kernel writes back a burst's files and database pages,
  // creating a file waits on the file system's journal (the raw hop measured 0.76 ms instead of 0.07 ms after a burst).
  execFileSync('sync');
  const gateway = await mailboxGateway(mode);
  const ours: number[] = [];
  const oursSynced: number[] = [];
  const raw: number[] = [];
  const rawDurable: number[] = [];
  const rounds = 5;
  await mailboxHops(gateway, 1_000_000, 20);
  for (let round = 0; round < rounds; round++) {
    raw.push(...(await rawHops(hops / rounds, false)));
    rawDurable.push(...(await rawHops(hops / rounds, true)));
    const { committed, synced } = await mailboxHops(gateway, round * hops, hops / rounds);
    ours.push(...committed);
    oursSynced.push(...synced);
  }
  const stats = (values: number[]) => ({ p50: percentile(values, 50), p99: percentile(values, 99) });
  await streamHops(gateway, 'w', 200, 2);
  const stream = stats(await streamHops(gateway, 's', hops * 4, 2));
  // The burst: every file written first, then the clock runs until the last one is an input.
  const seen = new Map<string, number>();
  let last = 0;
  const all = new Promise<void>((resolve) =>
    gateway.listen((id, at) => {
      if (!id.startsWith('m-b')) return;
      seen.set(id, (seen.get(id) ?? 0) + 1);
      last = at;
      if (seen.size === burst) resolve();
    }),
  );
  const start = performance.now();
  for (let i = 0; i < burst; i++) post(gateway.inbox, `b${i}`, i, 'Ops');
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([all, new Promise((resolve) => (timer = setTimeout(resolve, 300_000)))]);
  clearTimeout(timer);
  const perSec = seen.size / ((last - start) / 1000);
  const leftOver = readdirSync(gateway.inbox).filter((name) => name.endsWith('.json')).length;
  await gateway.stop();
  return {
    hop: stats(ours),
    hopSynced: stats(oursSynced),
    raw: stats(raw),
    rawDurable: stats(rawDurable),
    stream,
    burst: { messages: burst, perSec, lost: burst - seen.size, twice: [...seen.values()].filter((count) => count > 1).length, leftOver },
  };
}
