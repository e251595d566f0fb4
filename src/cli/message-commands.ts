/** `switchboard send`: a message to an agent or session, and waiting for its reply (chat-command.ts has `chat`). */
import { randomUUID } from 'node:crypto';
import { Option } from 'commander';
import { SwitchboardError } from '../core/errors.js';
import { QUEUE_MODES } from '../core/queue-mode.js';
import { program, client, globals, parseSeconds, print, EXIT_INTERRUPTED, EXIT_TIMEOUT } from './shared.js';
import { SessionWatch, Spinner, followLateResults } from './waiting.js';

/** Longest wait one HTTP request of the CLI makes (Node's fetch stops waiting for headers after 300 s). */
const MAX_WAIT_PER_REQUEST_S = 240;
/** gateway.waitTimeoutSeconds' default, used when --timeout is not given. */
const DEFAULT_WAIT_S = 120;

export interface SendResponse {
  status: 'accepted' | 'ok' | 'stored' | 'dropped' | 'timeout' | 'error';
  inputId: string;
  sessionKey: string;
  created?: boolean;
  reply?: string | null;
  runId?: string | null;
  runStatus?: string;
  error?: string | null;
  /** Sends with --from explain themselves. */
  note?: string;
}

export function describeSend(result: SendResponse): string {
  if (result.note && (result.status === 'accepted' || result.status === 'timeout'))
    return `${result.status}: input ${result.inputId} for ${result.sessionKey}: ${result.note}`;
  switch (result.status) {
    case 'error':
      return `the reply failed: ${result.error}`;
    case 'ok':
      return result.runStatus === undefined || result.runStatus === 'succeeded'
        ? (result.reply ?? '(no reply)')
        : `run ${result.runId} ${result.runStatus}: ${result.error ?? 'no detail'}`;
    case 'accepted':
      return `accepted input ${result.inputId} for ${result.sessionKey}${result.created ? '' : ' (duplicate idempotency key: the earlier input stands)'}`;
    case 'stored':
      return `stored in ${result.sessionKey} without starting a run (mode notify)`;
    case 'dropped':
      return `input ${result.inputId} was dropped: ${result.error}`;
    case 'timeout':
      return `no reply yet; input ${result.inputId} is delivered and will still be processed (follow it with "switchboard sessions history ${result.sessionKey}")`;
  }
}

program
  .command('send <target> <message>')
  .description('send a message to an agent (its main session) or a session key')
  .option('--from <sessionKey>', 'send as this agent session, with the checks its sessions_send tool meets')
  .option('-w, --wait', 'wait for the reply')
  .addOption(new Option('-m, --mode <mode>', 'queue mode when the session is busy').choices([...QUEUE_MODES]))
  .option(
    '-t, --timeout <seconds>',
    'how long --wait waits (default: gateway.waitTimeoutSeconds, 120); past it the command exits 124',
    parseSeconds,
  )
  .option('--idempotency-key <key>', 'send the same key again and the message is accepted once')
  .action(
    async (
      target: string,
      message: string,
      options: { from?: string; wait?: boolean; mode?: string; timeout?: number; idempotencyKey?: string },
    ) => {
      // Every send carries a key, so that sending again after a lost connection cannot duplicate it.
      const idempotencyKey = options.idempotencyKey ?? `cli:${randomUUID()}`;
      const api = client();
      const sendOnce = (timeoutSeconds?: number, wait = options.wait === true, signal?: AbortSignal) =>
        api
          .request<SendResponse>(
            'POST',
            '/v1/send',
            {
              target,
              message,
              ...(options.from ? { from: options.from } : { channel: 'cli' }),
              idempotencyKey,
              ...(options.mode ? { mode: options.mode } : {}),
              ...(wait ? { wait: true } : {}),
              ...(wait && timeoutSeconds ? { timeoutSeconds } : {}),
            },
            signal,
          )
          .catch((error: unknown) => {
            if (
              SwitchboardError.isInstance(error) &&
              error.code === 'GATEWAY_UNREACHABLE' &&
              error.details?.maybeDelivered &&
              !options.idempotencyKey
            ) {
              throw new SwitchboardError(
                error.code,
                `${error.message}; if it was accepted before the connection failed, send again with --idempotency-key ${idempotencyKey} to avoid a duplicate`,
              );
            }
            throw error;
          });
      if (!options.wait) {
        const result = await sendOnce();
        return print(result, () => describeSend(result));
      }
      // Without --timeout the gateway's gateway.waitTimeoutSeconds decides the wait; late results get its default.
      const deadline = Date.now() + (options.timeout ?? DEFAULT_WAIT_S) * 1000;
      // Accepted first (quick), so the session is known and its progress can be shown while waiting. A send
      // --from is one waited request: its reply goes to the waiting caller only if the first request waits.
      const accepted = options.from ? undefined : await sendOnce(undefined, false);
      const watch = accepted ? new SessionWatch(api, accepted.sessionKey) : undefined;
      const spinner = globals().json
        ? undefined
        : new Spinner(() => (watch ? `${watch.sessionKey}: ${watch.state}` : `waiting for the reply to ${options.from}`));
      const interrupted = new AbortController();
      const onSigint = () => interrupted.abort();
      process.once('SIGINT', onSigint);
      try {
        await watch?.refresh().catch(() => {});
        // HTTP clients give up on a response that takes minutes, so a long wait is several shorter ones: sending
        // again with the same idempotency key finds the same input and waits on.
        let result: SendResponse;
        do {
          const left = options.timeout ? Math.max(0.001, Math.min((deadline - Date.now()) / 1000, MAX_WAIT_PER_REQUEST_S)) : undefined;
          result = await sendOnce(left, true, interrupted.signal);
        } while (options.timeout && result.status === 'timeout' && deadline - Date.now() > 1000);
        spinner?.stop();
        print(result, () => describeSend(result));
        const failed =
          result.status === 'error' || (result.status === 'ok' && result.runStatus !== undefined && result.runStatus !== 'succeeded');
        if (result.status === 'timeout') process.exitCode = EXIT_TIMEOUT;
        else if (result.status === 'dropped' || failed) process.exitCode = 1;
        if (!watch || result.status !== 'ok' || failed || globals().json || !result.runId) return;
        // A reply that says a sub-agent is on it: its result, passed on by the agent, is shown when it comes in time.
        const { run } = await api.request<{ run: { id: string; startedAt: number } }>(
          'GET',
          `/v1/runs/${encodeURIComponent(result.runId)}`,
        );
        const complete = await followLateResults(api, watch, run, deadline, interrupted.signal, (text) =>
          process.stdout.write(`(later) ${text}\n`),
        );
        if (!complete) {
          process.stdout.write(
            `sub-agents are still working; their results will arrive in ${result.sessionKey} (follow with "switchboard sessions tail ${result.sessionKey}")\n`,
          );
        }
      } catch (error) {
        if (!interrupted.signal.aborted) throw error;
        spinner?.stop();
        const what = accepted
          ? `input ${accepted.inputId} is delivered and will still be processed (follow it with "switchboard sessions tail ${accepted.sessionKey}")`
          : 'the message is delivered and will still be processed';
        process.stdout.write(`stopped waiting; ${what}\n`);
        process.exitCode = EXIT_INTERRUPTED;
      } finally {
        spinner?.stop();
        watch?.close();
        process.removeListener('SIGINT', onSigint);
      }
    },
  );
