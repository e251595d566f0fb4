/**
 * Ingest of one inbox (docs/mailbox.md): a file is claimed by renaming it into `.processing/` (two readers cannot
 * both win a rename), read, checked and accepted as an input, and deleted only once that input is durable (one sync
 * for the files taken together; the next pass does not wait for it). A file that fails its checks moves to
 * `.rejected/` with `<file>.error` beside it; one that does not parse yet and changed within the grace period may
 * still be being written, and is tried again.
 * What a crash leaves in `.processing/` is ingested again at start: the input's idempotency key makes that harmless.
 * fs.watch wakes a pass; a periodic scan is the backstop.
 * The inbox's folders are checked to be real folders before each use (anyone who can write the shared folder can put
 * a link in place of one at any time): while one is not, the inbox is disabled, logged once, and nothing in it is
 * touched; the gateway and its other inboxes run on, and it is taken up again once the folder is fixed.
 */
import { createHash } from 'node:crypto';
import { constants, lstatSync, readdirSync, renameSync, rmSync, watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import { errorMessage } from '../core/errors.js';
import type { Clock } from '../ports/index.js';
import { PeriodicTask } from '../kit/serial-task.js';
import { claimFile, readMessageFile, realDirProblem, writeWhole } from './files.js';
import { checkMessage, type MailboxLayout, type MailMessage } from './layout.js';

/** A message the gateway will never take (its policy refused it, its text is empty): rejected, with the layer that said no. */
export class MessageRefused extends Error {
  override readonly name = 'MessageRefused';
  constructor(
    message: string,
    readonly layer: string,
  ) {
    super(message);
  }
}

export interface IngestOptions {
  layout: MailboxLayout;
  name: string;
  maxFileBytes: number;
  partialGraceMs: number;
  /** How long a file that does not parse yet holds back the files after it; PARTIAL_HOLD_MS unless a test says. */
  partialHoldMs?: number;
  scanIntervalMs: number;
  clock: Clock;
  /** Resolves once the message is a committed input; MessageRefused rejects the file, any other error tries it later. */
  accept(message: MailMessage, file: string): Promise<void>;
  /** Resolves once every input committed before the call is durable: only then are their files deleted. */
  durable(): Promise<void>;
  log(level: 'info' | 'warn' | 'error', message: string): void;
}

const RETRY_MS = 1000;
/**
 * A file that does not parse yet is read again once its age has doubled (at least this much later): most are caught
 * between a writer's open and its write (pi-messenger writes in place), and are whole a moment later.
 */
const PARTIAL_FIRST_RETRY_MS = 5;
/** How long a file that does not parse yet holds back the files after it (they are newer), from when it was first seen. */
const PARTIAL_HOLD_MS = 100;
/** How long a refused file that could not be moved into `.rejected/` is left alone before it is tried again. */
const SET_ASIDE_RETRY_MS = 60_000;
/** Files looked at together: each sender's in order, different senders' at once. */
const WINDOW = 64;

export class InboxIngest {
  private readonly passes: PeriodicTask;
  private watcher?: FSWatcher;
  /** Files in `.processing/` to look at again no sooner than this (still being written, or the gateway said later). */
  private readonly retryAt = new Map<string, number>();
  /** Files whose messages are committed inputs, waiting for a sync to be deleted: the passes leave them alone. */
  private readonly releasing = new Set<string>();
  /** The releases under way (`stop` and `settle` wait for them). */
  private readonly releases = new Set<Promise<void>>();
  /** Senders with a message the gateway could not take yet, until it is tried again: their later messages wait for it. */
  private readonly heldUntil = new Map<string, number>();
  /** A file was left in the inbox because a file of its name is still in `.processing/`: a release that ends looks again. */
  private deferred = false;
  /** When each file that does not parse yet was first seen so (its hold of the files after it ends in partialHoldMs). */
  private readonly partialSince = new Map<string, number>();
  private prunedAt = 0;
  /** Inbox files that could not be moved into `.processing/` (logged once; tried again each pass, while they are there). */
  private readonly unclaimable = new Set<string>();
  /** Files of `.processing/` refused but not movable into `.rejected/` (logged once; tried again every SET_ASIDE_RETRY_MS). */
  private readonly unmovable = new Set<string>();
  /** Why the inbox is disabled (a folder of it is a link, or not a folder), as last logged; undefined while it is usable. */
  private disabledBy?: string;

  constructor(private readonly options: IngestOptions) {
    this.passes = new PeriodicTask(
      () => this.pass(),
      (error) => options.log('error', `mailbox ${options.name}: ${errorMessage(error)}`),
      options.scanIntervalMs,
      // Its retry times come from this clock (a partly written file's retryAt).
      options.clock,
    );
  }

  private get inbox(): string {
    return this.options.layout.inbox(this.options.name);
  }

  private get processing(): string {
    return this.options.layout.processing(this.options.name);
  }

  private get rejected(): string {
    return this.options.layout.rejected(this.options.name);
  }

  /** Never throws for what is in the shared folder: an inbox whose folders are not usable is disabled, with a log line. */
  async start(): Promise<void> {
    if (this.usable()) this.watchInbox();
    // The first pass (leftovers of a crash, then what arrived meanwhile) runs beside the gateway's start, not before it.
    this.passes.start();
  }

  private watchInbox(): void {
    if (this.watcher) return;
    try {
      this.watcher = watch(this.inbox, () => this.kick());
      this.watcher.on('error', (error) =>
        this.options.log('warn', `mailbox ${this.options.name}: fs.watch failed (${errorMessage(error)}); scanning only`),
      );
    } catch (error) {
      this.options.log('warn', `mailbox ${this.options.name}: fs.watch unavailable (${errorMessage(error)}); scanning only`);
    }
  }

  /**
   * Whether the inbox, `.processing/` and `.rejected/` are real folders the gateway may use now (missing ones are made):
   * asked before each step that lists, reads, moves or deletes in them. The change either way is logged once.
   */
  private usable(): boolean {
    const { root } = this.options.layout;
    const all = constants.R_OK | constants.W_OK | constants.X_OK;
    const problem =
      realDirProblem(root, this.inbox, all) ?? realDirProblem(root, this.processing, all) ?? realDirProblem(root, this.rejected);
    if (problem === this.disabledBy) return problem === undefined;
    this.disabledBy = problem;
    if (problem)
      this.options.log(
        'error',
        `mailbox ${this.options.name}: inbox disabled: ${problem}; the inbox is taken up again within mailbox.scanIntervalMs once it is fixed, and the gateway's other inboxes and fronts run on`,
      );
    else this.options.log('info', `mailbox ${this.options.name}: the inbox's folders are real folders again; taking messages`);
    return problem === undefined;
  }

  async stop(): Promise<void> {
    this.watcher?.close();
    await this.passes.stop();
    await Promise.all(this.releases);
  }

  kick(): void {
    this.passes.kick();
  }

  /** Settles once a pass that started after the call has ended, and the files it accepted are released (tests). */
  async settle(): Promise<void> {
    await this.passes.settle();
    await Promise.all(this.releases);
  }

  /**
   * What `.processing/` holds (left by a crash, or waiting), then every message file in the inbox, oldest first, in
   * windows: within one, each sender's messages are taken in order, one at a time, and different senders' at once
   * (their commits then share a sync). A window's files are deleted once a sync covers them, beside the next window
   * and the next pass: a message that arrives meanwhile does not wait for the sync of the one before.
   */
  private async pass(): Promise<void> {
    this.prune();
    if (!this.usable()) return;
    this.watchInbox();
    const waiting = messageFiles(this.processing).filter(
      (file) => !this.releasing.has(file) && (this.retryAt.get(file) ?? 0) <= this.options.clock.now(),
    );
    const listed = messageFiles(this.inbox);
    const present = new Set(listed);
    for (const file of this.unclaimable) if (!present.has(file)) this.unclaimable.delete(file);
    const claimed = listed.filter((file) => {
      const claim = this.claim(file);
      // A second file of a name still in `.processing/` waits in the inbox until that one is done (then a pass looks).
      if (claim === 'busy') this.deferred = true;
      // `gone`: another reader claimed it first (a second gateway on this folder).
      return claim === 'claimed';
    });
    const files = [...waiting, ...claimed];
    /** Until when the files after one that does not parse yet (for its first partialHoldMs) wait for it. */
    let holdUntil: number | undefined;
    for (let at = 0; at < files.length && !this.passes.stopped; at += WINDOW) {
      // Checked again: the window before it waited for the gateway, and a folder may have become a link meanwhile.
      if (!this.usable()) return;
      const bySender = new Map<string, { file: string; message: MailMessage }[]>();
      for (const file of files.slice(at, at + WINDOW)) {
        if (holdUntil !== undefined) {
          this.retryAt.set(file, holdUntil);
          continue;
        }
        const message = this.prepareOrReject(file);
        if (message === 'partial') {
          const since = this.partialSince.get(file) ?? this.options.clock.now();
          this.partialSince.set(file, since);
          if (this.options.clock.now() - since < (this.options.partialHoldMs ?? PARTIAL_HOLD_MS)) holdUntil = this.retryAt.get(file);
          continue;
        }
        this.partialSince.delete(file);
        if (message && !this.heldBack(file, message.from))
          bySender.set(message.from, [...(bySender.get(message.from) ?? []), { file, message }]);
      }
      const accepted: string[] = [];
      await Promise.all(
        [...bySender.values()].map(async (queue) => {
          for (const [index, { file, message }] of queue.entries()) {
            const taken = await this.take(file, message);
            if (taken === 'accepted') accepted.push(file);
            if (taken !== 'later') continue;
            // Its later messages wait with it, so that they do not overtake it: these, and those of the passes meanwhile.
            this.heldUntil.set(message.from, this.retryAt.get(file)!);
            for (const later of queue.slice(index + 1)) this.retryAt.set(later.file, this.retryAt.get(file)!);
            return;
          }
        }),
      );
      this.releaseLater(accepted);
    }
  }

  /**
   * Forgets, once per scan interval, what no longer matters: retry times and holds that have passed, and files first
   * seen unparsed longer ago than the grace period (rejected since, or taken away by their writer, never to be listed
   * again). A file that keeps changing is seen anew at its next read.
   */
  private prune(): void {
    const now = this.options.clock.now();
    if (now - this.prunedAt < this.options.scanIntervalMs) return;
    this.prunedAt = now;
    for (const [file, at] of this.retryAt) if (at <= now) this.retryAt.delete(file);
    for (const [from, until] of this.heldUntil) if (until <= now) this.heldUntil.delete(from);
    for (const [file, since] of this.partialSince) if (now - since > this.options.partialGraceMs) this.partialSince.delete(file);
  }

  /** Whether the file waits for an earlier message of its sender that the gateway could not take yet (it is tried with it). */
  private heldBack(file: string, from: string): boolean {
    const until = this.heldUntil.get(from);
    if (until === undefined) return false;
    if (until <= this.options.clock.now()) {
      this.heldUntil.delete(from);
      return false;
    }
    this.retryAt.set(file, until);
    return true;
  }

  /** Moves an inbox file into `.processing/`; one that cannot be moved is left where it is (logged once), not in the way. */
  private claim(file: string): 'claimed' | 'gone' | 'busy' | 'skipped' {
    try {
      const claim = claimFile(join(this.inbox, file), join(this.processing, file));
      this.unclaimable.delete(file);
      return claim;
    } catch (error) {
      if (!this.unclaimable.has(file))
        this.options.log(
          'warn',
          `mailbox ${this.options.name}: ${file} cannot be moved into .processing/ (${errorMessage(error)}); left in the inbox, and the messages after it are taken`,
        );
      this.unclaimable.add(file);
      return 'skipped';
    }
  }

  /** `prepare`, with whatever it meets that it did not expect made the file's rejection, not the end of the pass. */
  private prepareOrReject(file: string): MailMessage | 'partial' | undefined {
    try {
      return this.prepare(file);
    } catch (error) {
      return void this.reject(file, `the file cannot be read (${errorMessage(error)})`);
    }
  }

  /**
   * The file's message, checked; `partial` when it does not parse yet and may still be being written (it is read again
   * soon); undefined when it was rejected or is gone.
   */
  private prepare(file: string): MailMessage | 'partial' | undefined {
    const read = readMessageFile(join(this.processing, file), this.options.maxFileBytes);
    if (read.kind === 'gone') {
      this.unmovable.delete(file);
      return void this.retryAt.delete(file);
    }
    if (read.kind === 'refused') return void this.reject(file, read.error);
    let value: unknown;
    try {
      value = JSON.parse(read.text);
    } catch (error) {
      const age = this.options.clock.now() - read.modifiedAt;
      if (age < this.options.partialGraceMs) {
        const retryAt =
          this.options.clock.now() + Math.min(RETRY_MS, this.options.partialGraceMs - age + 10, Math.max(PARTIAL_FIRST_RETRY_MS, age));
        this.retryAt.set(file, retryAt);
        // Looked at again then, sooner than the next scan.
        this.passes.kickAt(retryAt);
        return 'partial';
      }
      return void this.reject(file, `not JSON (${errorMessage(error)}), and unchanged for ${Math.round(age)} ms (mailbox.partialGraceMs)`);
    }
    const checked = checkMessage(value, this.options.name);
    if (!checked.ok) return void this.reject(file, checked.error);
    return checked.message;
  }

  /**
   * Accepted (`release` deletes its file), or refused and rejected; `later` when the gateway could not take it yet (its
   * sender's later files wait too).
   */
  private async take(file: string, message: MailMessage): Promise<'accepted' | 'rejected' | 'later'> {
    try {
      await this.options.accept(message, file);
    } catch (error) {
      if (error instanceof MessageRefused) {
        this.reject(file, `refused by ${error.layer}: ${error.message}`);
        return 'rejected';
      }
      this.retryAt.set(file, this.options.clock.now() + RETRY_MS);
      this.options.log('warn', `mailbox ${this.options.name}: ${file} not taken yet, tried again soon: ${errorMessage(error)}`);
      return 'later';
    }
    return 'accepted';
  }

  /** Starts `release` for these files, without waiting for it. */
  private releaseLater(files: string[]): void {
    if (files.length === 0) return;
    for (const file of files) this.releasing.add(file);
    const release: Promise<void> = this.release(files).finally(() => {
      for (const file of files) this.releasing.delete(file);
      this.releases.delete(release);
      if (!this.deferred) return;
      this.deferred = false;
      this.kick();
    });
    this.releases.add(release);
  }

  /**
   * The files of accepted messages, deleted once their inputs are durable. When the sync fails, or a file cannot be
   * deleted, they stay in `.processing/` and are read again soon: their idempotency keys find the inputs they became.
   */
  private async release(files: string[]): Promise<void> {
    try {
      await this.options.durable();
      if (!this.usable()) throw new Error('the inbox is disabled (see above); the files are deleted once it is fixed');
      for (const file of files) {
        rmSync(join(this.processing, file), { force: true });
        this.retryAt.delete(file);
      }
    } catch (error) {
      for (const file of files) this.retryAt.set(file, this.options.clock.now() + RETRY_MS);
      this.options.log('warn', `mailbox ${this.options.name}: accepted file(s) kept, read again soon: ${errorMessage(error)}`);
    }
  }

  private reject(file: string, reason: string): void {
    // Not moved while a folder is a link: it would land, or be taken from, outside the mailbox.
    if (!this.usable()) return void this.retryAt.set(file, this.options.clock.now() + RETRY_MS);
    this.retryAt.delete(file);
    const { rejected } = this;
    let name: string;
    try {
      name = rejectedName(rejected, file);
      renameSync(join(this.processing, file), join(rejected, name));
      this.unmovable.delete(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return void this.unmovable.delete(file);
      // Set aside where it is: tried again later, and the files after it are taken meanwhile.
      this.retryAt.set(file, this.options.clock.now() + SET_ASIDE_RETRY_MS);
      if (!this.unmovable.has(file))
        this.options.log(
          'warn',
          `mailbox ${this.options.name}: ${file} is refused (${reason}) but cannot be moved into .rejected/ (${errorMessage(error)}); left in .processing/ and tried again every ${SET_ASIDE_RETRY_MS / 1000} s, and the messages after it are taken`,
        );
      this.unmovable.add(file);
      return;
    }
    try {
      // Not synced: a crash may lose the reason, never the file, which is in .rejected/ already.
      const arrivedAs = name === file ? '' : ` (arrived as ${file})`;
      writeWhole(rejected, `${name}.error`, `${new Date(this.options.clock.now()).toISOString()} ${reason}${arrivedAs}\n`, false);
    } catch (error) {
      this.options.log(
        'warn',
        `mailbox ${this.options.name}: rejected ${file} as .rejected/${name}, but its reason could not be written beside it (${errorMessage(error)}): ${reason}`,
      );
      return;
    }
    this.options.log('warn', `mailbox ${this.options.name}: rejected ${file}: ${reason}`);
  }
}

/** The message files of a folder in name order (oldest first): `*.json`, not our dot-files and temporaries. */
export function messageFiles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return names.filter((name) => name.endsWith('.json') && !name.startsWith('.')).sort();
}

/**
 * The longest name a rejected file gets, in bytes: its reason is written as `<name>.error` through a temporary
 * `.<name>.error.<uuid>.tmp` (48 bytes more), and all of it must fit the file-name limit (255 bytes).
 */
export const MAX_REJECTED_NAME_BYTES = 200;

/**
 * A name in `.rejected/` for `file` that is free there: `file`, or with a counter before `.json` when that is taken; one
 * that would be longer than MAX_REJECTED_NAME_BYTES is cut, with a short hash of the whole name, so that the file and
 * its `.error` always fit.
 */
export function rejectedName(dir: string, file: string): string {
  for (let n = 0; ; n++) {
    const candidate = boundedName(file, n);
    if (!entryExists(join(dir, candidate))) return candidate;
  }
}

function boundedName(file: string, n: number): string {
  const ext = file.endsWith('.json') ? '.json' : '';
  const stem = file.slice(0, file.length - ext.length);
  const counter = n > 0 ? `.${n}` : '';
  const whole = `${stem}${counter}${ext}`;
  if (Buffer.byteLength(whole) <= MAX_REJECTED_NAME_BYTES) return whole;
  const tail = `~${createHash('sha256').update(file).digest('hex').slice(0, 10)}${counter}${ext}`;
  return `${leadingBytes(stem, MAX_REJECTED_NAME_BYTES - Buffer.byteLength(tail))}${tail}`;
}

/** The longest start of `text` of at most `bytes` bytes in UTF-8, never cutting a character. */
function leadingBytes(text: string, bytes: number): string {
  let used = 0;
  let end = 0;
  for (const char of text) {
    used += Buffer.byteLength(char);
    if (used > bytes) break;
    end += char.length;
  }
  return text.slice(0, end);
}

/** Whether anything (a link too, not followed) has this name. */
function entryExists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}
