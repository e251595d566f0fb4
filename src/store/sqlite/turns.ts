/**
 * Bounded turns of the event loop for a synchronous store.
 *
 * better-sqlite3 answers on the event loop, so under load one turn of the loop can run the continuations
 * of dozens of runs back to back (everything a WAL sync released, each until its next sync) before
 * the loop polls its sockets again. Meanwhile requests wait unread, and a new connection waits too: libuv
 * accepts one connection per turn, so with 80 ms turns a client opening 200 connections waited up to 10 s
 * for the last one. Each unit of store work first asks for a pass: within the current slice it goes on
 * at once; past it, it waits for a later turn, after the loop has polled. A turn lets a bounded number of
 * waiting units go on, oldest first, so no run is starved.
 *
 * A slice begins with the first unit after the loop has polled. (Timing slices from the last turn that
 * let waiting units go on made a unit that came straight from a socket wait a turn too, and the group
 * commit's deferred COMMIT ran in that turn: a waited send took two COMMITs four times in ten.)
 */

import type { Driver } from 'kysely';

// Captured at load: a test's fake timers must not stop the store.
const nextTurn = setImmediate;

/** Resolves in the check phase of this turn of the event loop (or the next, when called in it). */
export const laterTurn = (): Promise<void> => new Promise((resolve) => nextTurn(resolve));

export class Turns {
  private sliceStart = 0;
  /** A slice is open: this turn of the loop has run store work since it polled. */
  private open = false;
  private readonly parked: (() => void)[] = [];
  private scheduled = false;

  constructor(
    /** How long units may go on in one turn before the next must wait for the loop to poll. */
    private readonly sliceMs = 4,
    /** How many waiting units one turn lets go on. */
    private readonly perTurn = 16,
  ) {}

  /**
   * `undefined` while the slice has time left (go on); otherwise resolves in a later turn of the loop. The
   * first unit after the loop has polled opens a new slice: it waited for nothing, so it goes on at once.
   */
  pass(): Promise<void> | undefined {
    if (this.parked.length === 0) {
      if (!this.open) {
        this.startSlice();
        return undefined;
      }
      if (performance.now() - this.sliceStart < this.sliceMs) return undefined;
    }
    return new Promise((resolve) => {
      this.parked.push(resolve);
      this.schedule();
    });
  }

  /** Open until the check phase of this turn: units that come after the loop has polled start afresh. */
  private startSlice(): void {
    this.open = true;
    this.sliceStart = performance.now();
    nextTurn(this.close);
  }

  private readonly close = (): void => {
    this.open = false;
  };

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    nextTurn(this.turn);
  }

  private readonly turn = (): void => {
    this.scheduled = false;
    this.startSlice();
    for (const resume of this.parked.splice(0, this.perTurn)) resume();
    if (this.parked.length > 0) this.schedule();
  };
}

/** A Kysely driver whose units of work (a transaction, or a statement outside one) each ask `turns` for a pass first. */
export function inTurns(driver: Driver, turns: Turns): Driver {
  return {
    init: () => driver.init(),
    async acquireConnection() {
      const wait = turns.pass();
      if (wait) await wait;
      return driver.acquireConnection();
    },
    beginTransaction: (connection, settings) => driver.beginTransaction(connection, settings),
    commitTransaction: (connection) => driver.commitTransaction(connection),
    rollbackTransaction: (connection) => driver.rollbackTransaction(connection),
    releaseConnection: (connection) => driver.releaseConnection(connection),
    destroy: () => driver.destroy(),
  };
}
