/**
 * The store's worker thread: opens the SQLite store (sqlite/sqlite-store.ts) here and serves the calls the gateway's
 * thread makes through worker-store.ts, so that SQLite's statements, commits and Kysely's work run beside the
 * gateway's HTTP, JSON and model calls instead of on their event loop.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { SqliteStore, type SqliteStoreOptions } from '../sqlite/sqlite-store.js';
import {
  CALLBACK,
  HEADER_BYTES,
  SHARED_BYTES,
  toWire,
  PARTS,
  type Answer,
  type Call,
  type CallbackCall,
  type PathStep,
  type StoreShape,
  fromWire,
  type WireError,
} from './wire.js';

const port = parentPort!;
const shared = new SharedArrayBuffer(SHARED_BYTES);
const state = new Int32Array(shared, 0, 2);
const bytes = new Uint8Array(shared, HEADER_BYTES);
const decoder = new TextDecoder();

/**
 * A callback of the gateway's thread, called synchronously as the port's signature says: this thread waits until
 * the gateway's thread has run it and written its answer. An exchange's every move journals through one (a
 * `sessions_send` makes a few), a spawn, a recovery and a fork one each; the store waits meanwhile.
 */
function remoteCallback(callback: number) {
  return (...args: unknown[]): unknown => {
    Atomics.store(state, 0, 0);
    port.postMessage({ callback, args } satisfies CallbackCall);
    Atomics.wait(state, 0, 0);
    const text = decoder.decode(bytes.slice(0, Atomics.load(state, 1)));
    if (Atomics.load(state, 0) === 2) throw fromWire(JSON.parse(text) as WireError);
    return text === '' ? undefined : JSON.parse(text);
  };
}

/** Arguments as sent, with each function the gateway's thread passed (at the top or one level down) made callable. */
function withCallbacks(args: unknown[]): unknown[] {
  const revive = (value: unknown): unknown => {
    if (value === null || typeof value !== 'object') return value;
    if (CALLBACK in value) return remoteCallback((value as Record<string, number>)[CALLBACK]!);
    if (Array.isArray(value)) return value;
    let copy: Record<string, unknown> | undefined;
    for (const [key, inner] of Object.entries(value)) {
      if (inner !== null && typeof inner === 'object' && CALLBACK in inner) {
        copy ??= { ...(value as Record<string, unknown>) };
        copy[key] = remoteCallback((inner as Record<string, number>)[CALLBACK]!);
      }
    }
    return copy ?? value;
  };
  return args.map(revive);
}

function methodsOf(target: object): string[] {
  const names = new Set<string>();
  for (let proto = target; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name !== 'constructor' && typeof (target as Record<string, unknown>)[name] === 'function') names.add(name);
    }
  }
  return [...names];
}

function shapeOf(store: SqliteStore): StoreShape {
  return Object.fromEntries(PARTS.map((name) => [name, methodsOf(store[name])])) as StoreShape;
}

function targetOf(store: SqliteStore, path: PathStep[]): Record<string, (...args: unknown[]) => unknown> {
  let target: unknown = store;
  for (const step of path) {
    target =
      typeof step === 'string'
        ? (target as Record<string, unknown>)[step]
        : (target as { fenced(fence: unknown): unknown }).fenced(step.fenced);
  }
  return target as Record<string, (...args: unknown[]) => unknown>;
}

let store: SqliteStore;
try {
  store = await SqliteStore.open(workerData as SqliteStoreOptions);
} catch (error) {
  port.postMessage({ failed: toWire(error) });
  process.exit(0);
}
/** Answers ready in one turn go back as one message. */
let answers: Answer[] = [];
function send(answer: Answer): void {
  if (answers.length === 0) queueMicrotask(flush);
  answers.push(answer);
}
function flush(): void {
  const ready = answers;
  answers = [];
  try {
    port.postMessage(ready);
  } catch {
    // A result that cannot be copied back (it should be plain data): each is sent alone, and only that one fails.
    for (const answer of ready) {
      try {
        port.postMessage([answer]);
      } catch (error) {
        port.postMessage([{ id: answer.id, error: toWire(error) }]);
      }
    }
  }
}

async function serve({ id, path, method, args }: Call): Promise<void> {
  try {
    const target = targetOf(store, path);
    send({ id, value: await target[method]!.apply(target, withCallbacks(args)) });
  } catch (error) {
    send({ id, error: toWire(error) });
  }
}
port.on('message', (calls: Call[]) => {
  for (const call of calls) void serve(call);
});
port.postMessage({ ready: shapeOf(store), shared });
