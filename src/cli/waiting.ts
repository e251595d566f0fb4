/**
 * What `send --wait` shows while it waits: a spinner on a terminal with the elapsed time and the run's
 * state, and afterwards the late results of sub-agents the run spawned, as they arrive within the timeout.
 */
import type { RunRecord, SessionRecord } from '../ports/index.js';
import { waitUntil, type Wakeups } from '../kit/wait-until.js';
import type { ControlClient } from './client.js';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** One line on stderr, redrawn in place; nothing at all when stderr is not a terminal. */
export class Spinner {
  private timer?: NodeJS.Timeout;
  private frame = 0;
  private readonly started = Date.now();

  constructor(
    private readonly label: () => string,
    private readonly out: NodeJS.WriteStream = process.stderr,
  ) {
    if (!out.isTTY) return;
    this.timer = setInterval(() => this.draw(), 100);
    this.draw();
  }

  private draw(): void {
    const seconds = ((Date.now() - this.started) / 1000).toFixed(1);
    this.out.write(`\r\x1b[K${FRAMES[this.frame++ % FRAMES.length]} ${this.label()} (${seconds}s, Ctrl-C stops waiting)`);
  }

  stop(): void {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
    this.out.write('\r\x1b[K');
  }
}

/** The state of a session's work as its events tell it: queued, running, writing, done. */
export class SessionWatch {
  state = 'queued';
  private readonly stop = new AbortController();
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly api: ControlClient,
    readonly sessionKey: string,
  ) {
    void api
      .stream(`/v1/events?sessionKey=${encodeURIComponent(sessionKey)}&deltas=1`, (event) => this.onEvent(event), this.stop.signal)
      .catch(() => {});
  }

  /** The session as stored now (for the state before the stream began). */
  async refresh(): Promise<void> {
    const { session, queuedInputs } = await this.api.request<{ session: SessionRecord; queuedInputs: number }>(
      'GET',
      `/v1/sessions/${encodeURIComponent(this.sessionKey)}`,
    );
    if (session.state === 'running') this.state = 'running';
    else if (queuedInputs === 0 && this.state === 'queued') this.state = 'idle';
  }

  /** Resolves on the next event, after `ms`, or when `signal` aborts. */
  next(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.listeners.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.listeners.add(done);
      signal?.addEventListener('abort', done, { once: true });
      if (signal?.aborted) done();
    });
  }

  close(): void {
    this.stop.abort();
  }

  private onEvent(event: { event: string; data: string }): void {
    if (event.event === 'delta') this.state = 'writing';
    else if (event.event === 'run.started') this.state = 'running';
    else if (event.event === 'run.completed') this.state = 'finishing';
    for (const listener of [...this.listeners]) listener();
  }
}

const SETTLED = new Set(['succeeded', 'failed', 'timed_out', 'cancelled', 'interrupted']);

/**
 * After the reply: while sub-agents that the run spawned work, and until `deadline`, prints the replies
 * of the session's later runs (the parent passing a sub-agent's result on). The store is the record
 * here, not the event stream, so nothing that happened before the stream connected is missed.
 * Returns false if the deadline or Ctrl-C cut it short.
 */
export async function followLateResults(
  api: ControlClient,
  watch: SessionWatch,
  first: { id: string; startedAt: number },
  deadline: number,
  signal: AbortSignal,
  print: (text: string) => void,
): Promise<boolean> {
  const key = encodeURIComponent(watch.sessionKey);
  const { subagents } = await api.request<{ subagents: { subagentId: string; history: { at: number }[] }[] }>(
    'GET',
    `/v1/subagents?sessionKey=${key}`,
  );
  const spawned = subagents.filter((row) => (row.history[0]?.at ?? 0) >= first.startedAt).map((row) => row.subagentId);
  if (spawned.length === 0) return true;
  const printed = new Set([first.id]);
  const printLater = async () => {
    const { runs } = await api.request<{ runs: RunRecord[] }>('GET', `/v1/runs?sessionKey=${key}&limit=100`);
    for (const run of runs.reverse()) {
      if (printed.has(run.id) || run.startedAt < first.startedAt || run.status === 'running') continue;
      printed.add(run.id);
      if (run.status === 'succeeded' && run.finalText) print(run.finalText);
    }
  };
  // The gateway's one wait, woken here by the session's event stream instead of the journal.
  const wakeups: Wakeups = {
    clock: { now: () => Date.now() },
    pause: (ms, _wakeOn, aborted) => watch.next(ms, aborted),
    stopping: () => false,
  };
  const done = await waitUntil(
    deadline,
    async () => {
      await printLater();
      // Done when each sub-agent has ended, its completion is in the session, and the session has answered it.
      const children = await Promise.all(
        spawned.map((id) => api.request<{ state: string; completion: string | null }>('GET', `/v1/subagents/${encodeURIComponent(id)}`)),
      );
      const handedOver = children.every((child) => SETTLED.has(child.state) && child.completion !== 'pending');
      const { session, queuedInputs } = await api.request<{ session: SessionRecord; queuedInputs: number }>('GET', `/v1/sessions/${key}`);
      return handedOver && session.state !== 'running' && queuedInputs === 0 ? true : undefined;
    },
    wakeups,
    () => true,
    signal,
  );
  // A run that ended between the last listing and the session check is printed too.
  if (done) await printLater();
  return done === true;
}
