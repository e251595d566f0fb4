/**
 * A page kept current by the journal: `refresh` runs when the page opens, and again after the events it follows, at
 * most once per `everyMs` however many events arrive, so that a busy gateway is not read again on every event.
 */
import { useEffect, useState } from 'preact/hooks';
import { type Delta, follow, type JournalEvent } from './api.js';

export interface LiveOptions {
  /** The stream's filters (`/v1/events`). */
  query: { sessionKey?: string; type?: string; deltas?: boolean; recent?: number };
  /** Where the last event seen is kept across reloads (sessionStorage). */
  resumeKey: string;
  refresh: () => unknown;
  onEvent?: (event: JournalEvent) => void;
  onDelta?: (delta: Delta) => void;
  everyMs?: number;
}

export function useLive(options: LiveOptions, deps: unknown[] = []): void {
  useEffect(() => {
    const everyMs = options.everyMs ?? 500;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let last = 0;
    const run = () => {
      timer = undefined;
      last = Date.now();
      void options.refresh();
    };
    run();
    const stop = follow(
      options.query,
      options.resumeKey,
      (event) => {
        options.onEvent?.(event);
        timer ??= setTimeout(run, Math.max(0, last + everyMs - Date.now()));
      },
      options.onDelta,
    );
    return () => {
      clearTimeout(timer);
      stop();
    };
  }, deps);
}

/** The current time, ticking every second (elapsed times shown live). */
export function useNow(): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  return now;
}
