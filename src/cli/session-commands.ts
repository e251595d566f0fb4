/** `switchboard sessions`: list, show, history and tail. */
import type { RunToolCall } from '../ports/gateway.js';
import type { EventRecord, InputRecord, Provenance, RunRecord, SessionRecord, TranscriptEntry } from '../ports/index.js';
import { errorMessage, SwitchboardError } from '../core/errors.js';
import { parseSessionKey } from '../core/session-key.js';
import { cliCommand, type ControlClient } from './client.js';
import { followJournal } from './follow.js';
import { ago, contentText, describeEvent, shorten, table } from './format.js';
import { program, globals, client, configPath, parseLimit, parseSeq, withQuery, print, runRow } from './shared.js';

const sessions = program.command('sessions').description('inspect sessions');
sessions
  .command('list')
  .description('sessions, newest first')
  .option('--agent <id>', 'only this agent')
  .option('--archived', 'only archived sessions')
  .option('--current', 'only sessions not archived')
  .option('--limit <n>', 'at most n', parseLimit)
  .action(async (options: { agent?: string; archived?: boolean; current?: boolean; limit?: number }) => {
    if (options.archived && options.current)
      throw new SwitchboardError('INVALID_REQUEST', '--archived and --current exclude each other; give one');
    const archived = options.archived ? 'true' : options.current ? 'false' : undefined;
    const { sessions: rows } = await client().request<{ sessions: SessionRecord[] }>(
      'GET',
      withQuery('/v1/sessions', { agentId: options.agent, archived, limit: options.limit }),
    );
    print({ sessions: rows }, () =>
      table(
        rows.map((s) => ({
          key: s.key,
          agent: s.agentId,
          label: s.label,
          state: s.archivedAt ? 'archived' : s.state,
          route: s.route ? s.route.channel : null,
          updated: ago(s.updatedAt),
        })),
        ['key', 'agent', 'label', 'state', 'route', 'updated'],
      ),
    );
  });
sessions
  .command('label <key> [label]')
  .description('label a session (as the console does); without a label, remove it')
  .action(async (key: string, label: string | undefined) => {
    const { session } = await client().request<{ session: SessionRecord }>('PATCH', `/v1/sessions/${encodeURIComponent(key)}`, {
      label: label ?? null,
    });
    print({ session }, () => (session.label ? `${session.key} is labelled "${session.label}"` : `${session.key} has no label`));
  });
sessions
  .command('archive <key>')
  .description("archive a session: it leaves the console's tree and `sessions list --current`, and still takes messages")
  .option('--undo', 'make it current again')
  .action(async (key: string, options: { undo?: boolean }) => {
    const { session } = await client().request<{ session: SessionRecord }>('PATCH', `/v1/sessions/${encodeURIComponent(key)}`, {
      archived: !options.undo,
    });
    print({ session }, () => `${session.key} is ${session.archivedAt ? 'archived' : 'current'}`);
  });
sessions
  .command('history <key>')
  .description("a session's transcript, oldest first")
  .option('--limit <n>', 'the last n entries', parseLimit)
  .action(async (key: string, options: { limit?: number }) => {
    const { entries } = await client().request<{ entries: TranscriptEntry[] }>(
      'GET',
      withQuery(`/v1/sessions/${encodeURIComponent(key)}/history`, { limit: options.limit }),
    );
    print({ entries }, () =>
      entries.length === 0
        ? '(no messages yet)'
        : entries
            .map((entry) => {
              const from =
                entry.provenance && entry.provenance.kind !== 'user'
                  ? ` (${entry.provenance.kind}${entry.provenance.sourceAgent ? ` from ${entry.provenance.sourceAgent}` : ''})`
                  : '';
              return `${new Date(entry.createdAt).toISOString().slice(11, 19)} ${entry.role}${from}: ${contentText(entry.content)}`;
            })
            .join('\n'),
    );
  });
sessions
  .command('show <key>')
  .description("a session's state, route, queue and five latest runs")
  .action(async (key: string) => {
    const shown = await client().request<{ session: SessionRecord; recentRuns: RunRecord[]; queuedInputs: number }>(
      'GET',
      `/v1/sessions/${encodeURIComponent(key)}`,
    );
    print(shown, () =>
      [
        `session ${shown.session.key}`,
        `  agent:  ${shown.session.agentId}`,
        `  state:  ${shown.session.state}, ${shown.queuedInputs} queued input(s)`,
        `  route:  ${shown.session.route ? JSON.stringify(shown.session.route) : '-'}`,
        `  parent: ${shown.session.parentKey ?? '-'}`,
        `  created ${ago(shown.session.createdAt)}, updated ${ago(shown.session.updatedAt)}`,
        'recent runs:',
        table(shown.recentRuns.map(runRow), ['id', 'status', 'started', 'ms', 'calls', 'text']),
      ].join('\n'),
    );
  });

sessions
  .command('tail <key>')
  .description("follow a session live: each message with its sender, each run's tool calls and end (Ctrl-C ends)")
  .option('--after <seq>', 'first replay the events after this sequence number (0 = all of them)', parseSeq)
  .option('--deltas', 'also print the model text as it streams')
  .action(async (key: string, options: { after?: number; deltas?: boolean }) => {
    await checkTailable(client(), key);
    // Streamed text has no newline of its own: the next event line starts on a line of its own.
    let midLine = false;
    const line = (text: string) => {
      process.stdout.write(`${midLine ? '\n' : ''}${text}\n`);
      midLine = false;
    };
    await followJournal(client, {
      query: { sessionKey: key, deltas: options.deltas ? 1 : undefined },
      after: options.after,
      resume: (after) => cliCommand(`sessions tail ${key} --after ${after}`, configPath()),
      onDelta: (delta, raw) => {
        if (globals().json) return line(raw);
        process.stdout.write(delta.text);
        midLine = delta.text.length > 0 && !delta.text.endsWith('\n');
      },
      onEvent: async (record, raw) => {
        if (globals().json) return line(raw);
        // A client made now: a gateway that restarted may listen elsewhere. Details that cannot be read (the gateway
        // went away just then) are said to be missing; the event itself is always printed.
        const details = (when: 'before' | 'after') =>
          runDetails(client(), record, when).catch((error: unknown) => [
            `  (${when === 'before' ? 'its messages' : 'its tool calls'} could not be read: ${errorMessage(error)})`,
          ]);
        for (const text of await details('before')) line(text);
        line(describeEvent(record));
        for (const text of await details('after')) line(text);
      },
    });
    if (midLine) process.stdout.write('\n');
  });

/**
 * A key that can never have events is an error, not a silent wait: one that is not a session key, or whose agent the
 * gateway does not have. A session not created yet (its first message is still to come) is waited for, and said so.
 */
async function checkTailable(control: ControlClient, key: string): Promise<void> {
  try {
    await control.request('GET', `/v1/sessions/${encodeURIComponent(key)}`);
    return;
  } catch (error) {
    if (!SwitchboardError.isInstance(error) || error.code !== 'SESSION_NOT_FOUND') throw error;
  }
  const parsed = parseSessionKey(key);
  if (!parsed)
    throw new SwitchboardError(
      'INVALID_REQUEST',
      `"${key}" is not a session key (agent:<agentId>:main, agent:<agentId>:<channel>:direct:<peer>, ...; list them with "switchboard sessions list")`,
    );
  const { agents } = await control.request<{ agents: { id: string }[] }>('GET', '/v1/agents');
  if (!agents.some((agent) => agent.id === parsed.agentId))
    throw new SwitchboardError(
      'AGENT_NOT_FOUND',
      `no session "${key}", and the gateway has no agent "${parsed.agentId}" (it has: ${agents.map((agent) => agent.id).join(', ')})`,
    );
  process.stderr.write(`switchboard: no session ${key} yet; following it from its first event (Ctrl-C ends)\n`);
}

/** What `sessions tail` prints about a run besides its events: the messages it took (before), its tool calls (after). */
async function runDetails(control: ControlClient, record: EventRecord, when: 'before' | 'after'): Promise<string[]> {
  if (!record.runId || (record.type !== 'run.started' && record.type !== 'run.completed')) return [];
  if ((when === 'before') !== (record.type === 'run.started')) return [];
  const shown = await control.request<{ inputs: InputRecord[]; toolCalls: RunToolCall[] }>(
    'GET',
    `/v1/runs/${encodeURIComponent(record.runId)}`,
  );
  if (record.type === 'run.started') return shown.inputs.map((input) => `  <- ${senderOf(input.provenance)}: ${shorten(input.text, 160)}`);
  return shown.toolCalls.map((call) => `  tool ${call.toolName}(${shorten(call.input, 80)}) -> ${shorten(call.output, 120)}`);
}

/** Who a message came from, as its provenance says. */
function senderOf(provenance: Provenance): string {
  const from = provenance.sourceSession ?? provenance.peer ?? provenance.channel ?? 'user';
  return `${provenance.kind} from ${from}${provenance.channel && from !== provenance.channel ? ` via ${provenance.channel}` : ''}`;
}
