/**
 * A running task's text as artifact chunks: the run's deltas, passed on as they are written, until its answer
 * replaces them.
 */
import { AgentEvent, type ExecutionEventBus } from '@a2a-js/sdk/server';
import type { Events, Waits } from '../ports/gateway.js';
import { answerArtifactId, textPart } from './task-outcome.js';

export interface DeltaRelay {
  /** The task is working on this input: pass on its run's chunks (those written so far first). */
  start(inputId: string): void;
  /** No more chunks; resolves once those already taken are published. */
  stop(): Promise<void>;
}

export const NO_RELAY: DeltaRelay = { start: () => {}, stop: async () => {} };

/**
 * The run's text as it is written, as chunks of one artifact; the final answer replaces them. Watched from
 * before the input is stored, so that its run streams and no chunk is missed, and held until the task
 * is working. Only the run that took this message counts (another task of the same context may run
 * first): a delta from a run not yet known is checked against the input's run, in order.
 */
export function relayDeltas(
  gateway: Pick<Waits, 'inputRunId'> & Pick<Events, 'subscribe' | 'watchDeltas'>,
  bus: ExecutionEventBus,
  { taskId, contextId, sessionKey }: { taskId: string; contextId: string; sessionKey: string },
): DeltaRelay {
  let started!: (inputId: string | undefined) => void;
  const working = new Promise<string | undefined>((resolve) => (started = resolve));
  const runs = new Map<string, boolean>();
  let chunks = 0;
  let pending = Promise.resolve();
  const unwatch = gateway.watchDeltas(sessionKey);
  const unsubscribe = gateway.subscribe((live) => {
    if (live.type !== 'delta' || live.sessionKey !== sessionKey) return;
    pending = pending.then(async () => {
      const inputId = await working;
      if (inputId === undefined) return;
      // Never reject: nobody awaits this chain until the end.
      if (!runs.has(live.runId)) runs.set(live.runId, (await gateway.inputRunId(inputId).catch(() => undefined)) === live.runId);
      if (!runs.get(live.runId)) return;
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId: answerArtifactId(inputId),
            name: 'answer',
            description: '',
            parts: [textPart(live.text)],
            metadata: {},
            extensions: [],
          },
          append: chunks++ > 0,
          lastChunk: false,
          metadata: {},
        }),
      );
    });
  });
  return {
    start: (inputId) => started(inputId),
    stop: async () => {
      unsubscribe();
      unwatch();
      started(undefined);
      await pending;
    },
  };
}
