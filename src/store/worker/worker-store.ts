/**
 * The SQLite store on a worker thread of its own (docs/architecture.md, "The store's thread"). The gateway's thread
 * keeps HTTP, JSON, the runs and the model calls; each store call is one message to the worker, which runs the
 * statements, the group commit and the WAL sync there and answers with the result. The Store this returns is the
 * same port as SqliteStore's, with the same guarantees: a call is answered when the worker's store answers it.
 */
import { Worker } from 'node:worker_threads';
import { SwitchboardError } from '../../core/errors.js';
import type { Store } from '../../ports/index.js';
import { NO_SIGNALS } from '../kysely/no-signals.js';
import type { SqliteStoreOptions } from '../sqlite/sqlite-store.js';
import {
  CALLBACK,
  HEADER_BYTES,
  PARTS,
  TOP,
  fromWire,
  toWire,
  type Answer,
  type Call,
  type CallbackCall,
  type PathStep,
  type StoreShape,
  type WireError,
} from './wire.js';

type Pending = { resolve: (value: unknown) => void; reject: (error: Error) => void; callbacks?: number[] };

class StoreThread {
  private nextId = 1;
  private nextCallback = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly callbacks = new Map<number, (...args: unknown[]) => unknown>();
  private stopped: Error | undefined;
  /** Set once the store closes: calls made after that are refused, not sent. */
  private closing: Error | undefined;
  private readonly state: Int32Array;
  private readonly bytes: Uint8Array;
  private readonly encoder = new TextEncoder();
  private outgoing: Call[] = [];

  constructor(
    private readonly worker: Worker,
    shared: SharedArrayBuffer,
    /** Told when the thread stops without being closed (a crash in the store's code): nothing more can be stored. */
    private readonly onStopped: (error: Error) => void,
  ) {
    this.state = new Int32Array(shared, 0, 2);
    this.bytes = new Uint8Array(shared, HEADER_BYTES);
    worker.on('message', (message: Answer[] | CallbackCall) => {
      if (!Array.isArray(message)) return this.runCallback(message);
      for (const answer of message) this.answer(answer);
    });
    worker.on('error', (error) => this.stop(error));
    worker.on('exit', (code) => this.stop(new Error(`exit code ${code}`)));
  }

  private answer(answer: Answer): void {
    const waiting = this.pending.get(answer.id);
    if (!waiting) return;
    this.pending.delete(answer.id);
    for (const callback of waiting.callbacks ?? []) this.callbacks.delete(callback);
    if ('error' in answer) waiting.reject(fromWire(answer.error));
    else waiting.resolve(answer.value);
  }

  /** Calls made in one turn go to the worker as one message. */
  private flush = (): void => {
    const calls = this.outgoing;
    this.outgoing = [];
    try {
      this.worker.postMessage(calls);
    } catch {
      // An argument that cannot be copied to another thread (a function deeper down, a class with private state):
      // each call is sent alone, so that only the one that cannot be fails.
      for (const call of calls) {
        try {
          this.worker.postMessage([call]);
        } catch (error) {
          this.answer({ id: call.id, error: toWire(error) });
        }
      }
    }
  };

  call(path: PathStep[], method: string, args: unknown[]): Promise<unknown> {
    if (this.stopped ?? this.closing) return Promise.reject(this.stopped ?? this.closing);
    const id = this.nextId++;
    let callbacks: number[] | undefined;
    const keep = (fn: (...args: unknown[]) => unknown) => {
      const ref = this.nextCallback++;
      this.callbacks.set(ref, fn);
      (callbacks ??= []).push(ref);
      return { [CALLBACK]: ref };
    };
    const sent = args.map((arg) => {
      if (typeof arg === 'function') return keep(arg as (...args: unknown[]) => unknown);
      if (arg === null || typeof arg !== 'object' || Array.isArray(arg) || !hasFunction(arg)) return arg;
      return Object.fromEntries(
        Object.entries(arg).map(([key, value]) => [
          key,
          typeof value === 'function' ? keep(value as (...args: unknown[]) => unknown) : value,
        ]),
      );
    });
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, callbacks });
      if (this.outgoing.length === 0) queueMicrotask(this.flush);
      this.outgoing.push({ id, path, method, args: sent });
    });
  }

  /** Runs a callback the worker waits on, and hands it the answer through the shared buffer. */
  private runCallback({ callback, args }: CallbackCall): void {
    let failed = false;
    let text: string;
    try {
      const fn = this.callbacks.get(callback);
      if (!fn) throw new Error(`store worker: callback ${callback} is gone`);
      const value = fn(...args);
      text = value === undefined ? '' : JSON.stringify(value);
    } catch (error) {
      failed = true;
      text = jsonOf(toWire(error));
    }
    const { read, written } = this.encoder.encodeInto(text, this.bytes);
    if (read < text.length) {
      failed = true;
      const { written: short } = this.encoder.encodeInto(
        JSON.stringify(toWire(new Error('store worker: a callback answer too large'))),
        this.bytes,
      );
      Atomics.store(this.state, 1, short);
    } else Atomics.store(this.state, 1, written);
    Atomics.store(this.state, 0, failed ? 2 : 1);
    Atomics.notify(this.state, 0);
  }

  private stop(cause: Error): void {
    if (this.stopped) return;
    if (this.closing) {
      this.stopped = this.closing;
      this.rejectPending();
      return;
    }
    this.stopped = Object.assign(
      new SwitchboardError(
        'STORE_FAILED',
        `the store's worker thread stopped (${cause.message}): nothing more can be read or written; restart the gateway`,
      ),
      { cause },
    );
    this.rejectPending();
    this.onStopped(this.stopped);
  }

  private rejectPending(): void {
    for (const waiting of this.pending.values()) waiting.reject(this.stopped!);
    this.pending.clear();
    this.callbacks.clear();
  }

  /** From now on calls are refused; the ones made before still go. */
  close(): void {
    this.closing ??= new SwitchboardError('GATEWAY_STOPPING', 'the store is closed: the gateway is stopping');
  }

  /** Ends the thread; a call still unanswered is refused as the store closed. */
  async terminate(): Promise<void> {
    this.close();
    await this.worker.terminate();
    this.stop(this.closing!);
  }
}

/** JSON of an error's wire form; one that cannot be written (a cycle, a bigint in its details) keeps its message alone. */
function jsonOf(error: WireError): string {
  try {
    return JSON.stringify(error);
  } catch {
    return JSON.stringify({ name: error.name, message: error.message });
  }
}

const hasFunction = (value: object) => Object.values(value).some((inner) => typeof inner === 'function');

function partOf(thread: StoreThread, path: PathStep[], methods: string[]): Record<string, unknown> {
  const part: Record<string, unknown> = {};
  for (const method of methods) part[method] = (...args: unknown[]) => thread.call(path, method, args);
  return part;
}

/** Opens the SQLite store on a worker thread; refuses as SqliteStore.open would (a locked file, a newer schema). */
export async function openWorkerStore(
  options: SqliteStoreOptions,
  /** Told when the thread dies without being closed (its default throws nothing and waits: the calls are refused). */
  onStopped: (error: Error) => void = () => {},
): Promise<Store> {
  const worker = import.meta.url.endsWith('.ts')
    ? // Sources run through tsx (the tests, `npm run dev`): the worker loads its sources through tsx too.
      new Worker(
        `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((tsx) => { tsx.register(); return import(${JSON.stringify(new URL('./store-worker.ts', import.meta.url).href)}); })`,
        { eval: true, workerData: options },
      )
    : new Worker(new URL('./store-worker.js', import.meta.url), { workerData: options });
  const opened = await new Promise<{ ready: StoreShape; shared: SharedArrayBuffer }>((resolve, reject) => {
    const onExit = (code: number) => reject(new Error(`the store's worker thread exited (code ${code}) while opening the store`));
    worker.once('error', reject);
    worker.once('exit', onExit);
    worker.once('message', (message: { ready: StoreShape; shared: SharedArrayBuffer } | { failed: WireError }) => {
      worker.off('error', reject);
      worker.off('exit', onExit);
      if ('failed' in message) reject(fromWire(message.failed));
      else resolve(message);
    });
  });
  const thread = new StoreThread(worker, opened.shared, onStopped);
  const store: Record<string, unknown> = partOf(thread, [], [...TOP]);
  for (const name of PARTS) store[name] = partOf(thread, [name], opened.ready[name]);
  const board = store.board as Record<string, unknown>;
  board.fenced = (fence: unknown) => partOf(thread, ['board', { fenced: fence }], opened.ready.board);
  store.signals = NO_SIGNALS;
  store.close = async () => {
    const closed = thread.call([], 'close', []);
    thread.close();
    try {
      await closed;
    } finally {
      await thread.terminate();
    }
  };
  return store as unknown as Store;
}
