/** `switchboard subagents`: what sessions spawned, their state and results. */
import { table } from './format.js';
import { program, client, withQuery, print } from './shared.js';

interface SubagentRow {
  subagentId: string;
  childSessionKey: string;
  parentSessionKey: string;
  label: string | null;
  role: string;
  depth: number;
  state: string;
  waitingForSubagents: boolean;
  elapsedMs: number;
  tokens: { input: number; output: number };
  diagnostic: string | null;
}

const stateText = (row: SubagentRow) => `${row.state}${row.waitingForSubagents ? ' (waiting for its sub-agents)' : ''}`;
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

/** The spawn tree below `root`, one line per sub-agent. */
function drawTree(root: string, rows: SubagentRow[]): string {
  const lines = [root];
  const walk = (parent: string, indent: string) => {
    const children = rows.filter((row) => row.parentSessionKey === parent);
    children.forEach((row, index) => {
      const last = index === children.length - 1;
      const name = row.label ? `"${row.label}"` : row.subagentId.slice(0, 8);
      lines.push(
        `${indent}${last ? '└─' : '├─'} ${name} [${row.role}] ${stateText(row)}, ${seconds(row.elapsedMs)}, ${row.tokens.input + row.tokens.output} tokens  ${row.childSessionKey}`,
      );
      walk(row.childSessionKey, `${indent}${last ? '   ' : '│  '}`);
    });
  };
  walk(root, '');
  return lines.join('\n');
}

const subagents = program.command('subagents').description('sub-agents: what sessions spawned, their state and results');
subagents
  .command('list <sessionKey>')
  .description("a session's sub-agents")
  .option('--recursive', 'every descendant, not only its children')
  .action(async (key: string, options: { recursive?: boolean }) => {
    const { subagents: rows } = await client().request<{ subagents: SubagentRow[] }>(
      'GET',
      withQuery('/v1/subagents', { sessionKey: key, recursive: options.recursive ? 'true' : undefined }),
    );
    print({ subagents: rows }, () =>
      rows.length === 0
        ? '(no sub-agents)'
        : table(
            rows.map((row) => ({
              session: row.childSessionKey,
              label: row.label,
              role: row.role,
              state: stateText(row),
              elapsed: seconds(row.elapsedMs),
              tokens: row.tokens.input + row.tokens.output,
            })),
            ['session', 'label', 'role', 'state', 'elapsed', 'tokens'],
          ),
    );
  });
subagents
  .command('show <target>')
  .description('one sub-agent (by child session key or id): task, state history, result')
  .action(async (target: string) => {
    const shown = await client().request<
      SubagentRow & {
        task: string;
        tools: string[];
        result: string | null;
        resultHash: string | null;
        history: { state: string; at: number; diagnostic?: string }[];
        completion: string | null;
        runId: string | null;
        worktree: { path: string; branch: string } | null;
        runtime: string | null;
      }
    >('GET', `/v1/subagents/${encodeURIComponent(target)}`);
    print(shown, () =>
      [
        `sub-agent ${shown.subagentId}${shown.label ? ` "${shown.label}"` : ''} (${shown.role}, depth ${shown.depth})`,
        `  session:  ${shown.childSessionKey}`,
        `  parent:   ${shown.parentSessionKey}`,
        `  state:    ${stateText(shown)}${shown.diagnostic ? ` - ${shown.diagnostic}` : ''}`,
        `  task:     ${shown.task}`,
        shown.runtime ? `  runtime:  ${shown.runtime} (its own tools; docs/runtimes.md)` : `  tools:    ${shown.tools.join(', ') || '-'}`,
        `  run:      ${shown.runId ?? '-'}; completion to parent: ${shown.completion ?? '-'}`,
        ...(shown.worktree ? [`  worktree: ${shown.worktree.path} (branch ${shown.worktree.branch})`] : []),
        '  history:',
        ...shown.history.map(
          (step) => `    ${new Date(step.at).toISOString()} ${step.state}${step.diagnostic ? ` - ${step.diagnostic}` : ''}`,
        ),
        `  result:   ${shown.result ?? '-'}`,
        ...(shown.resultHash ? [`  sha256:   ${shown.resultHash}`] : []),
      ].join('\n'),
    );
  });
subagents
  .command('kill <target>')
  .description('cancel a sub-agent and all its descendants; its parent is told')
  .action(async (target: string) => {
    const { cancelled } = await client().request<{ cancelled: string[] }>('POST', `/v1/subagents/${encodeURIComponent(target)}/kill`);
    print({ cancelled }, () =>
      cancelled.length === 0 ? `${target} had already ended; nothing to cancel` : `cancelled ${cancelled.length}:\n${cancelled.join('\n')}`,
    );
  });
subagents
  .command('tree <sessionKey>')
  .description('draw the spawn tree below a session, with states')
  .action(async (key: string) => {
    const { subagents: rows } = await client().request<{ subagents: SubagentRow[] }>(
      'GET',
      withQuery('/v1/subagents', { sessionKey: key, recursive: 'true' }),
    );
    print({ root: key, subagents: rows }, () => drawTree(key, rows));
  });
