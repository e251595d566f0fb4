/** `switchboard sessions`: list, show, history and tail. */
import type { EventRecord, RunRecord, SessionRecord, TranscriptEntry } from '../ports/index.js';
import { ago, contentText, describeEvent, table } from './format.js';
import { program, globals, client, parseLimit, parseSeq, withQuery, print, runRow } from './shared.js';

const sessions = program.command('sessions').description('inspect sessions');
sessions
  .command('list')
  .description('sessions, newest first')
  .option('--agent <id>', 'only this agent')
  .option('--limit <n>', 'at most n', parseLimit)
  .action(async (options: { agent?: string; limit?: number }) => {
    const { sessions: rows } = await client().request<{ sessions: SessionRecord[] }>(
      'GET',
      withQuery('/v1/sessions', { agentId: options.agent, limit: options.limit }),
    );
    print({ sessions: rows }, () =>
      table(
        rows.map((s) => ({
          key: s.key,
          agent: s.agentId,
          state: s.state,
          route: s.route ? s.route.channel : null,
          updated: ago(s.updatedAt),
        })),
        ['key', 'agent', 'state', 'route', 'updated'],
      ),
    );
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
  .description("follow a session's events live (Ctrl-C ends)")
  .option('--after <seq>', 'first replay the events after this sequence number (0 = all of them)', parseSeq)
  .option('--deltas', 'also print the model text as it streams')
  .action(async (key: string, options: { after?: number; deltas?: boolean }) => {
    const query = withQuery('/v1/events', { sessionKey: key, after: options.after, deltas: options.deltas ? 1 : undefined });
    const stop = new AbortController();
    process.once('SIGINT', () => stop.abort());
    // Streamed text has no newline of its own: the next event line starts on a line of its own.
    let midLine = false;
    const line = (text: string) => {
      process.stdout.write(`${midLine ? '\n' : ''}${text}\n`);
      midLine = false;
    };
    await client().stream(
      query,
      (event) => {
        if (event.event === 'delta') {
          const delta = JSON.parse(event.data) as { text: string };
          if (globals().json) return line(event.data);
          process.stdout.write(delta.text);
          midLine = delta.text.length > 0 && !delta.text.endsWith('\n');
          return;
        }
        const record = JSON.parse(event.data) as EventRecord;
        line(globals().json ? event.data : describeEvent(record));
      },
      stop.signal,
    );
    if (midLine) process.stdout.write('\n');
  });
