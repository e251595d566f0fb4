/**
 * The console's only way to the gateway: the control API (docs/control-api.md), with the login cookie. A change
 * carries the console's header, which the API requires of cookie logins. A 401 sends the browser to the login page.
 * Each page names the answer it reads with the server's own type (src/http/answers.ts, src/ports/): type-only imports,
 * erased from the bundle.
 */
import type { StatusAnswer } from '../../src/http/answers.js';
import type { EventRecord } from '../../src/ports/journal.js';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export async function api<T = unknown>(path: string, options: { method?: string; body?: unknown } = {}): Promise<T> {
  const response = await fetch(path, {
    method: options.method ?? 'GET',
    credentials: 'same-origin',
    headers: {
      'x-switchboard-console': '1',
      ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  let data: unknown = {};
  try {
    data = text ? JSON.parse(text) : {};
  } catch {
    // Not JSON (a proxy's page, or the gateway's plain-text 503): its first line is the message.
    data = { error: { code: 'HTTP_ERROR', message: text.split('\n')[0].slice(0, 300) } };
  }
  if (!response.ok) {
    // The API's error body is `{ error: { code, message } }`; a proxy in between may answer anything.
    const error = (data as { error?: { code?: string; message?: string } } | null)?.error ?? {};
    if (response.status === 401 && !path.startsWith('/login')) location.hash = '#/login';
    throw new ApiError(response.status, error.code ?? 'HTTP_ERROR', error.message ?? `${response.status} ${response.statusText}`);
  }
  return data as T;
}

/** A journal event as `/v1/events` sends it. */
export type JournalEvent = EventRecord;

export interface Delta {
  type: 'delta';
  sessionKey: string;
  runId: string;
  text: string;
}

/**
 * Follows the journal over SSE (`/v1/events`). The browser's EventSource resumes after a dropped connection with
 * Last-Event-ID; across a reload, the last event seen is kept in sessionStorage under `resumeKey`, and the stream
 * starts after it, so nothing published while the page reloaded is missed. With `recent`, the stream starts that many
 * events before the newest instead (a page that lists the latest events shows them when it opens).
 */
export function follow(
  query: { sessionKey?: string; type?: string; deltas?: boolean; recent?: number },
  resumeKey: string,
  onEvent: (event: JournalEvent) => void,
  onDelta?: (delta: Delta) => void,
  onState?: (connected: boolean) => void,
): () => void {
  let source: EventSource | undefined;
  let closed = false;
  const open = async () => {
    const params = new URLSearchParams();
    if (query.sessionKey) params.set('sessionKey', query.sessionKey);
    if (query.type) params.set('type', query.type);
    if (query.deltas) params.set('deltas', '1');
    const stored = sessionStorage.getItem(`resume:${resumeKey}`);
    if (query.recent) {
      const status = await api<StatusAnswer>('/v1/status').catch(() => undefined);
      if (status) params.set('after', String(Math.max(0, status.journalSeq - query.recent)));
      else if (stored) params.set('after', stored);
    } else if (stored) params.set('after', stored);
    if (closed) return;
    source = new EventSource(`/v1/events?${params}`);
    const onMessage = (message: MessageEvent) => {
      const event = JSON.parse(message.data) as JournalEvent;
      sessionStorage.setItem(`resume:${resumeKey}`, String(event.seq));
      onEvent(event);
    };
    for (const type of EVENT_TYPES) source.addEventListener(type, onMessage as EventListener);
    if (onDelta) source.addEventListener('delta', ((message: MessageEvent) => onDelta(JSON.parse(message.data))) as EventListener);
    source.onopen = () => onState?.(true);
    source.onerror = () => onState?.(false);
  };
  void open();
  return () => {
    closed = true;
    source?.close();
  };
}

const EVENT_TYPES = [
  'loop.stopped',
  'run.started',
  'run.completed',
  'run.interrupted',
  'run.step',
  'run.suspended',
  'run.resumed',
  'run.forked',
  'run.abort_requested',
  'input.stored',
  'input.dropped',
  'session.reply',
  'lane.stalled',
  'outbox.dead',
  'exchange.updated',
  'subagent.updated',
  'board.updated',
  'runtime.update',
  'a2a.task',
  'a2a.refused',
  'approval.requested',
  'approval.decided',
  'budget.refused',
];

/** "3.2 s", "4 min 10 s", "2 h 5 min". */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${(ms / 1000).toFixed(1)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
}

export function time(ms: number | null | undefined): string {
  if (!ms) return '';
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

/** Millionths of a US dollar (the gateway's unit of cost) as "$0.0123". */
export function dollars(micros: number): string {
  return `$${(micros / 1e6).toFixed(4)}`;
}

export function clip(text: string, max = 200): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

export function enc(value: string): string {
  return encodeURIComponent(value);
}
