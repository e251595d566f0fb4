/** `switchboard board`: the task board for people and outside workers (docs/board.md). */
import { readFileSync } from 'node:fs';
import { InvalidArgumentError } from 'commander';
import { BOARD_STATES } from '../core/board.js';
import type { BoardClaim, BoardTaskRecord, BoardTaskView } from '../ports/index.js';
import { cliCommand } from './client.js';
import { followJournal } from './follow.js';
import { ago, describeEvent } from './format.js';
import { program, globals, client, configPath, parseLimit, parseSeq, withQuery, print } from './shared.js';

const board = program.command('board').description('the task board: shared work that agents, outside workers and remote agents claim');

function parseToken(value: string): number {
  const token = Number(value);
  if (!Number.isInteger(token) || token < 1)
    throw new InvalidArgumentError(`expected the claim's token (a whole number from claim), got "${value}"`);
  return token;
}

function parseInteger(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number)) throw new InvalidArgumentError(`expected a whole number, got "${value}"`);
  return number;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];
const path = (id: string, verb = '') => `/v1/board/tasks/${encodeURIComponent(id)}${verb ? `/${verb}` : ''}`;

/** A task as `GET /v1/board/tasks` lists it: with the tasks it depends on. */
type ListedTask = BoardTaskRecord & { dependsOn: string[] };

function taskLine(task: ListedTask): string {
  const who = task.state === 'running' ? ` [${task.claimWorker}, attempt ${task.attempts}]` : task.assignee ? ` [${task.assignee}]` : '';
  const after = task.dependsOn.length ? ` (after ${task.dependsOn.map((id) => id.slice(0, 8)).join(', ')})` : '';
  return `  ${task.id.slice(0, 8)}  ${task.priority !== 0 ? `p${task.priority} ` : ''}${task.title}${who}${after}${task.blockReason ? ` - ${task.blockKind}: ${task.blockReason.split('\n')[0]}` : ''}`;
}

/** The board as columns of a kanban, one state after another, in the order work flows. */
function kanban(tasks: ListedTask[]): string {
  if (tasks.length === 0) return '(no tasks)';
  return BOARD_STATES.map((state) => {
    const column = tasks.filter((task) => task.state === state);
    return column.length === 0 ? '' : `${state.toUpperCase()} (${column.length})\n${column.map(taskLine).join('\n')}`;
  })
    .filter(Boolean)
    .join('\n\n');
}

function describeView(view: BoardTaskView): string {
  const { task } = view;
  const lines = [
    `${task.id}  ${task.title}`,
    `state: ${task.state}${task.blockKind ? ` (${task.blockKind})` : ''}   board: ${task.board}   assignee: ${task.assignee ?? '(anyone)'}   priority: ${task.priority}`,
    `created ${ago(task.createdAt)} by ${task.creator}; attempts ${task.attempts}, failed ${task.failures} of at most ${task.maxAttempts}${task.labels.length ? `; labels ${task.labels.join(', ')}` : ''}`,
  ];
  if (task.state === 'running')
    lines.push(`claimed by ${task.claimWorker} (token ${task.token}), expires ${new Date(task.claimExpiresAt!).toISOString()}`);
  if (task.body) lines.push('', task.body);
  if (task.blockReason) lines.push('', `blocked: ${task.blockReason}`);
  if (task.result !== null)
    lines.push('', `result (${task.resultChars} characters, sha256 ${task.resultHash?.slice(0, 12)}):`, task.result);
  if (view.dependsOn.length)
    lines.push('', 'depends on:', ...view.dependsOn.map((dep) => `  ${dep.id.slice(0, 8)}  ${dep.state.padEnd(9)} ${dep.title}`));
  if (view.dependents.length)
    lines.push('', 'needed by:', ...view.dependents.map((dep) => `  ${dep.id.slice(0, 8)}  ${dep.state.padEnd(9)} ${dep.title}`));
  if (view.attempts.length) {
    lines.push('', 'attempts:');
    for (const attempt of view.attempts) {
      const detail = attempt.error ?? attempt.summary;
      lines.push(
        `  ${attempt.attempt}. ${attempt.worker}, ${ago(attempt.startedAt)}: ${attempt.outcome ?? 'running'}${detail ? ` - ${detail}` : ''}`,
        ...(attempt.session ? [`     session ${attempt.session}, run ${attempt.runId ?? '(not started)'}`] : []),
      );
    }
  }
  if (view.comments.length)
    lines.push('', 'comments:', ...view.comments.map((comment) => `  ${ago(comment.createdAt)} ${comment.author}: ${comment.body}`));
  return lines.join('\n');
}

board
  .command('list')
  .description('tasks grouped by state, like a kanban')
  .option('--board <name>', 'only this board')
  .option('--state <states>', 'only these states, comma-separated')
  .option('--assignee <who>', 'only tasks assigned to this agent or worker')
  .option('--limit <n>', 'at most n', parseLimit)
  .action(async (options: { board?: string; state?: string; assignee?: string; limit?: number }) => {
    const { tasks } = await client().request<{ tasks: ListedTask[] }>('GET', withQuery('/v1/board/tasks', { ...options }));
    print({ tasks }, () => kanban(tasks));
  });

board
  .command('show <id>')
  .description('one task: its dependencies, attempts and comments')
  .action(async (id: string) => {
    const view = await client().request<BoardTaskView>('GET', path(id));
    print(view, () => describeView(view));
  });

board
  .command('create <title>')
  .description('put a task on the board (ready, or todo while a task it depends on is not done)')
  .option('--body <text>', 'what to do, in detail')
  .option('--board <name>', 'which board', 'default')
  .option('--assignee <who>', 'an agent id, a worker name or a remote A2A agent id (default: anyone)')
  .option('--priority <n>', 'higher is claimed first', parseInteger)
  .option('--label <label>', 'a label (repeat for more)', collect)
  .option('--depends-on <id>', 'a task that must be done first (repeat for more)', collect)
  .option('--key <key>', 'idempotency key: the same key creates one task')
  .option('--max-attempts <n>', 'failed attempts before the task gives up (default board.maxAttempts)', parseLimit)
  .option('--max-runtime <seconds>', 'a claim held longer than this is taken back', parseLimit)
  .option('--triage', 'start in triage rather than ready')
  .action(
    async (
      title: string,
      options: {
        body?: string;
        board: string;
        assignee?: string;
        priority?: number;
        label?: string[];
        dependsOn?: string[];
        key?: string;
        maxAttempts?: number;
        maxRuntime?: number;
        triage?: boolean;
      },
    ) => {
      const answer = await client().request<{ task: BoardTaskRecord; created: boolean; warning?: string }>('POST', '/v1/board/tasks', {
        title,
        body: options.body,
        board: options.board,
        assignee: options.assignee,
        priority: options.priority,
        labels: options.label,
        dependsOn: options.dependsOn,
        idempotencyKey: options.key,
        maxAttempts: options.maxAttempts,
        maxRuntimeSeconds: options.maxRuntime,
        triage: options.triage,
      });
      print(answer, () => `${answer.created ? 'created' : 'already there (same key)'}: ${answer.task.id} (${answer.task.state})`);
      // In --json too, on stderr: a typo in --assignee would otherwise wait forever without a word.
      if (answer.warning) process.stderr.write(`switchboard: warning: ${answer.warning}\n`);
    },
  );

board
  .command('move <id> <state>')
  .description(`move a task by hand (${BOARD_STATES.join(', ')}); from review, done approves and ready sends it back`)
  .option('--reason <text>', 'why, for the task log')
  .action(async (id: string, state: string, options: { reason?: string }) => {
    const { task } = await client().request<{ task: BoardTaskRecord }>('POST', path(id, 'move'), { state, reason: options.reason });
    print({ task }, () => `${task.id} is ${task.state}`);
  });

board
  .command('review <id>')
  .description('answer a task in review: --approve (done) or --changes <comment> (ready again, with the comment)')
  .option('--approve', 'the result is good: the task is done')
  .option('--changes <comment>', 'what to change: the task is ready again, with this comment')
  .action(async (id: string, options: { approve?: boolean; changes?: string }) => {
    if (!options.approve === (options.changes === undefined))
      throw new InvalidArgumentError('give --approve or --changes <comment> (one of them)');
    const { task } = await client().request<{ task: BoardTaskRecord }>('POST', path(id, 'review'), {
      approve: !!options.approve,
      comment: options.changes,
    });
    print({ task }, () => `${task.id} is ${task.state}`);
  });

board
  .command('comment <id> <text>')
  .description('comment on a task; a worker passes --worker and --token to comment under its claim')
  .option('--worker <name>', 'comment as this worker')
  .option('--token <n>', "the worker's claim token", parseToken)
  .action(async (id: string, text: string, options: { worker?: string; token?: number }) => {
    const { comment } = await client().request<{ comment: { seq: number } }>('POST', path(id, 'comments'), {
      body: text,
      worker: options.worker,
      token: options.token,
    });
    print({ comment }, () => `comment ${comment.seq} added`);
  });

board
  .command('link <id> <dependsOn>')
  .description('make a task wait until another is done (a cycle is refused)')
  .action(async (id: string, dependsOn: string) => {
    const { task } = await client().request<{ task: BoardTaskRecord }>('POST', path(id, 'links'), { dependsOn });
    print({ task }, () => `${task.id} now depends on ${dependsOn} (${task.state})`);
  });

board
  .command('claim')
  .description('claim the best ready task as an outside worker; prints its token (exit 0, and no claim, when none is ready)')
  .requiredOption('--worker <name>', 'who is claiming: a name of your own, shown on the board')
  .option('--assignee <who>', 'only tasks assigned to this (default: unassigned tasks and those assigned to the worker)')
  .option('--board <name>', 'only this board')
  .option('--task <id>', 'this task only')
  .option('--ttl <seconds>', 'how long the claim holds without a heartbeat (default board.claimTtlSeconds)', parseLimit)
  .action(async (options: { worker: string; assignee?: string; board?: string; task?: string; ttl?: number }) => {
    const answer = await client().request<{ claim: BoardClaim | null } & Partial<BoardTaskView>>('POST', '/v1/board/claim', {
      worker: options.worker,
      assignee: options.assignee,
      board: options.board,
      taskId: options.task,
      ttlSeconds: options.ttl,
    });
    print(answer, () =>
      answer.claim
        ? `claimed ${answer.claim.taskId} (attempt ${answer.claim.attempt}, token ${answer.claim.token}, expires ${new Date(answer.claim.expiresAt).toISOString()}): ${answer.task!.title}`
        : '(nothing to claim)',
    );
  });

board
  .command('heartbeat <id>')
  .description('keep a claim alive')
  .requiredOption('--token <n>', "the claim's token", parseToken)
  .option('--ttl <seconds>', 'extend by this much (default board.claimTtlSeconds)', parseLimit)
  .action(async (id: string, options: { token: number; ttl?: number }) => {
    const { claim } = await client().request<{ claim: BoardClaim }>('POST', path(id, 'heartbeat'), {
      token: options.token,
      ttlSeconds: options.ttl,
    });
    print({ claim }, () => `claim on ${claim.taskId} holds until ${new Date(claim.expiresAt).toISOString()}`);
  });

board
  .command('complete <id>')
  .description('finish a claimed task with its result')
  .requiredOption('--token <n>', "the claim's token", parseToken)
  .option('--result <text>', 'the result')
  .option('--result-file <path>', 'read the result from a file (- for stdin)')
  .option('--summary <text>', 'one line on what was done')
  .option('--review', 'send it to review instead of done')
  .action(async (id: string, options: { token: number; result?: string; resultFile?: string; summary?: string; review?: boolean }) => {
    if ((options.result === undefined) === (options.resultFile === undefined))
      throw new InvalidArgumentError('give the result with --result or --result-file (one of them)');
    const result = options.result ?? readFileSync(options.resultFile === '-' ? 0 : options.resultFile!, 'utf8');
    const { task } = await client().request<{ task: BoardTaskRecord }>('POST', path(id, 'complete'), {
      token: options.token,
      result,
      summary: options.summary,
      review: options.review,
    });
    print({ task }, () => `${task.id} is ${task.state}`);
  });

board
  .command('block <id>')
  .description('stop a claimed task and say why')
  .requiredOption('--token <n>', "the claim's token", parseToken)
  .requiredOption('--kind <kind>', 'dependency, needs_input or failed')
  .requiredOption('--reason <text>', 'what is in the way')
  .action(async (id: string, options: { token: number; kind: string; reason: string }) => {
    const { task } = await client().request<{ task: BoardTaskRecord }>('POST', path(id, 'block'), {
      token: options.token,
      kind: options.kind,
      reason: options.reason,
    });
    print({ task }, () => `${task.id} is blocked (${task.blockKind})`);
  });

board
  .command('release <id>')
  .description('give a claimed task back (it is ready again; not counted as a failure)')
  .requiredOption('--token <n>', "the claim's token", parseToken)
  .option('--reason <text>', 'why, for the task log')
  .action(async (id: string, options: { token: number; reason?: string }) => {
    const { task } = await client().request<{ task: BoardTaskRecord }>('POST', path(id, 'release'), {
      token: options.token,
      reason: options.reason,
    });
    print({ task }, () => `${task.id} is ${task.state}`);
  });

board
  .command('watch')
  .description('follow the board live (Ctrl-C ends)')
  .option('--after <seq>', 'first replay the journal after this sequence number (0 = all of it)', parseSeq)
  .option('--task <id>', 'only this task')
  .action(async (options: { after?: number; task?: string }) => {
    await followJournal(client, {
      query: { type: 'board.' },
      after: options.after,
      resume: (after) => cliCommand(`board watch --after ${after}${options.task ? ` --task ${options.task}` : ''}`, configPath()),
      onEvent: (record, raw) => {
        if (options.task && !String((record.payload as { taskId?: string }).taskId).startsWith(options.task)) return;
        process.stdout.write(`${globals().json ? raw : describeEvent(record)}\n`);
      },
    });
  });
