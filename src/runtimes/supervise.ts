/**
 * The life of one external run, the same for ACP agents and CLI children (docs/runtimes.md): the work races the
 * child's exit and the run's abort (a kill, the timeout, a shutdown). An abort first asks the child to stop (ACP's
 * `session/cancel`), gives it `graceMs`, then ends its process group; a child that exits before its work is done
 * crashed. Whatever happened, the child and its group are gone when this returns.
 */
import { errorMessage } from '../core/errors.js';
import { abortMessage, statusForAbort, type AbortReason } from '../core/run-status.js';
import type { ExternalRunRequest } from '../ports/runtimes.js';
import type { ExecutedRun } from '../ports/runtimes.js';
import { NO_REQUEST } from '../core/request-size.js';
import { describeExit, type ChildExit, type RuntimeChild } from './child-process.js';
import type { RunRecorder } from './run-recorder.js';

export type Supervised<T> =
  | { kind: 'done'; value: T }
  | { kind: 'failed'; error: unknown }
  | { kind: 'exited'; exit: ChildExit }
  | { kind: 'aborted'; reason: AbortReason };

export async function supervise<T>(options: {
  child: RuntimeChild;
  work: Promise<T>;
  signal: AbortSignal;
  /** Asks the child to stop its work (ACP's session/cancel); the process group is ended `graceMs` later regardless. */
  softStop?: () => void;
  graceMs: number;
}): Promise<Supervised<T>> {
  const { child, signal, graceMs } = options;
  const work = options.work.then(
    (value): Supervised<T> => ({ kind: 'done', value }),
    (error: unknown): Supervised<T> => ({ kind: 'failed', error }),
  );
  const exited = child.exited.then((exit): Supervised<T> => ({ kind: 'exited', exit }));
  let onAbort = () => {};
  const aborted = new Promise<Supervised<T>>((resolve) => {
    onAbort = () => resolve({ kind: 'aborted', reason: signal.reason as AbortReason });
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  let outcome = await Promise.race([work, exited, aborted]);
  signal.removeEventListener('abort', onAbort);
  if (outcome.kind === 'aborted') {
    try {
      options.softStop?.();
    } catch {
      // A child that cannot be asked is ended below all the same.
    }
    const grace = new Promise((resolve) => setTimeout(resolve, graceMs).unref());
    await Promise.race([work, exited, grace]);
  } else if (outcome.kind === 'exited') {
    // The exit may come a moment before the work reads the last of the child's output.
    const settled = await Promise.race([work, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 1000))]);
    if (settled?.kind === 'done') outcome = settled;
  } else if (outcome.kind === 'failed') {
    // A work that failed because the child died (its pipe closed a moment before its exit) is the child's crash.
    const crashed = await Promise.race([exited, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 500))]);
    if (crashed) outcome = crashed;
  }
  await child.terminate(graceMs);
  return outcome;
}

/** The run as the gateway commits it: the child's transcript and last message, with its status and error. */
export function executedRun(
  recorder: RunRecorder,
  request: Pick<ExternalRunRequest, 'prompt' | 'timeoutMessage'>,
  outcome: { status: ExecutedRun['status']; error?: { code: string; message: string } },
): ExecutedRun {
  return {
    status: outcome.status,
    finalText: recorder.lastMessage(),
    messages: recorder.messages(),
    usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0, steps: 0 },
    promptChars: request.prompt.length,
    request: NO_REQUEST,
    // The child's tool calls are its own: no gateway tool held a result for this run.
    toolCalls: 0,
    ...(outcome.error ? { error: outcome.error } : {}),
  };
}

/** The status and error of a run that did not end by its own work: aborted, crashed, or failed to talk. */
export function unfinished(
  outcome: Exclude<Supervised<unknown>, { kind: 'done' }>,
  child: RuntimeChild,
  request: Pick<ExternalRunRequest, 'timeoutMessage'>,
  what: string,
): { status: ExecutedRun['status']; error: { code: string; message: string } } {
  if (outcome.kind === 'aborted') {
    const status = statusForAbort(outcome.reason);
    const message = outcome.reason === 'timeout' && request.timeoutMessage ? request.timeoutMessage : abortMessage(outcome.reason);
    return { status, error: { code: status.toUpperCase(), message } };
  }
  if (outcome.kind === 'exited')
    return { status: 'failed', error: { code: 'RUNTIME_FAILED', message: `${what} ${describeExit(outcome.exit, child.stderrTail())}` } };
  return { status: 'failed', error: { code: 'RUNTIME_FAILED', message: `${what} failed: ${errorMessage(outcome.error)}` } };
}
