/** `switchboard send` and `chat`: messages to agents, waiting for their replies. */
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline/promises';
import { Option } from 'commander';
import { SwitchboardError, errorMessage } from '../core/errors.js';
import { QUEUE_MODES } from '../core/queue-mode.js';
import { program, client, parseSeconds, print } from './shared.js';

/** Longest wait one HTTP request of the CLI makes (Node's fetch stops waiting for headers after 300 s). */
const MAX_WAIT_PER_REQUEST_S = 240;

interface SendResponse {
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

function describeSend(result: SendResponse): string {
  if (result.note && (result.status === 'accepted' || result.status === 'timeout')) return `${result.status}: input ${result.inputId} for ${result.sessionKey}: ${result.note}`;
  switch (result.status) {
    case 'error':
      return `the reply failed: ${result.error}`;
    case 'ok':
      return result.runStatus === undefined || result.runStatus === 'succeeded' ? (result.reply ?? '(no reply)') : `run ${result.runId} ${result.runStatus}: ${result.error ?? 'no detail'}`;
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
  .option('-t, --timeout <seconds>', 'how long --wait waits', parseSeconds)
  .option('--idempotency-key <key>', 'send the same key again and the message is accepted once')
  .action(async (target: string, message: string, options: { from?: string; wait?: boolean; mode?: string; timeout?: number; idempotencyKey?: string }) => {
    // Every send carries a key, so that sending again after a lost connection cannot duplicate it.
    const idempotencyKey = options.idempotencyKey ?? `cli:${randomUUID()}`;
    const api = client();
    const sendOnce = (timeoutSeconds?: number) =>
      api
        .request<SendResponse>('POST', '/v1/send', {
          target,
          message,
          ...(options.from ? { from: options.from } : { channel: 'cli' }),
          idempotencyKey,
          ...(options.mode ? { mode: options.mode } : {}),
          ...(options.wait ? { wait: true } : {}),
          ...(timeoutSeconds ? { timeoutSeconds } : {}),
        })
        .catch((error: unknown) => {
          if (SwitchboardError.isInstance(error) && error.code === 'GATEWAY_UNREACHABLE' && error.details?.maybeDelivered && !options.idempotencyKey) {
            throw new SwitchboardError(error.code, `${error.message}; if it was accepted before the connection failed, send again with --idempotency-key ${idempotencyKey} to avoid a duplicate`);
          }
          throw error;
        });
    // HTTP clients give up on a response that takes minutes, so a long wait is several shorter ones: sending
    // again with the same idempotency key finds the same input and waits on.
    const deadline = Date.now() + (options.timeout ?? 0) * 1000;
    let result = await sendOnce(options.timeout ? Math.min(options.timeout, MAX_WAIT_PER_REQUEST_S) : undefined);
    while (options.wait && options.timeout && result.status === 'timeout' && deadline - Date.now() > 1000) {
      result = await sendOnce(Math.min((deadline - Date.now()) / 1000, MAX_WAIT_PER_REQUEST_S));
    }
    print(result, () => describeSend(result));
    const failed = result.status === 'error' || (result.status === 'ok' && result.runStatus !== undefined && result.runStatus !== 'succeeded');
    if (result.status === 'timeout' || result.status === 'dropped' || failed) process.exitCode = 1;
  });

program
  .command('chat <agent>')
  .description('talk with an agent interactively (Ctrl-D or /exit ends)')
  .action(async (agent: string) => {
    const api = client();
    const { agents: list } = await api.request<{ agents: { id: string; name: string | null }[] }>('GET', '/v1/agents');
    const found = list.find((candidate) => candidate.id === agent);
    if (!found) throw new SwitchboardError('AGENT_NOT_FOUND', `unknown agent "${agent}" (configured agents: ${list.map((a) => a.id).join(', ')})`);
    const sessionKey = `agent:${agent}:main`;
    // The reply streams in as the model writes it; the send's answer then closes the line.
    const streamedRuns = new Set<string>();
    const events = new AbortController();
    void api
      .stream(
        `/v1/events?sessionKey=${encodeURIComponent(sessionKey)}&deltas=1`,
        (event) => {
          if (event.event !== 'delta') return;
          const delta = JSON.parse(event.data) as { runId: string; text: string };
          if (!streamedRuns.has(delta.runId)) process.stdout.write(`${agent}> `);
          streamedRuns.add(delta.runId);
          process.stdout.write(delta.text);
        },
        events.signal,
      )
      .catch(() => {});
    const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY });
    process.stdout.write(`chatting with ${found.name ?? found.id} (session ${sessionKey}). /exit to leave.\n`);
    const prompt = () => process.stdout.write('you> ');
    prompt();
    // Iterating (rather than rl.question) keeps lines that arrive while a reply is pending, as piped input does.
    for await (const line of rl) {
      if (line.trim() === '/exit') break;
      if (!line.trim()) {
        prompt();
        continue;
      }
      try {
        const result = await api.request<SendResponse>('POST', '/v1/send', { target: agent, message: line, channel: 'cli', wait: true });
        const streamed = !!result.runId && streamedRuns.has(result.runId);
        if (streamed) process.stdout.write('\n');
        if (!streamed || result.runStatus !== 'succeeded') process.stdout.write(`${agent}> ${describeSend(result)}\n`);
      } catch (error) {
        process.stdout.write(`error: ${errorMessage(error)}\n`);
      }
      prompt();
    }
    process.stdout.write('\n');
    rl.close();
    events.abort();
  });
