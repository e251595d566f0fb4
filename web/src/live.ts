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
    // One read at a time: an older read that answers last would show the page as it was before the newest event.
    let reading = false;
    let again = false;
    let stopped = false;
    const schedule = () => {
      timer ??= setTimeout(run, Math.max(0, last + everyMs - Date.now()));
    };
    const run = async () => {
      timer = undefined;
      if (reading) {
        again = true;
        return;
      }
      reading = true;
      last = Date.now();
      try {
        await options.refresh();
      } finally {
        reading = false;
        if (again && !stopped) {
          again = false;
          schedule();
        }
      }
    };
    void run();
    const stop = follow(
      options.query,
      options.resumeKey,
      (event) => {
        options.onEvent?.(event);
        schedule();
      },
      options.onDelta,
    );
    return () => {
      stopped = true;
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

/** Whether the tab is shown: a hidden tab can let go of a stream it only needs while someone looks. */
export function useVisible(): boolean {
  const [visible, setVisible] = useState(!document.hidden);
  useEffect(() => {
    const changed = () => setVisible(!document.hidden);
    document.addEventListener('visibilitychange', changed);
    return () => document.removeEventListener('visibilitychange', changed);
  }, []);
  return visible;
}
