/**
 * The board's tools (docs/board.md). Worker tools (board_complete, board_block, board_request_review) are
 * offered in a board task's session and act under the claim the dispatcher holds for it; the others are
 * offered to the agents `board.agents` names. Failures are data, as with the session tools.
 */
import { z } from 'zod';
import { BLOCK_KINDS, BOARD_STATES } from '../core/board.js';
import { SwitchboardError } from '../core/errors.js';
import { parseSessionKey } from '../core/session-key.js';
import { matchesAny } from '../core/tool-policy.js';
import type { BoardActor, BoardService } from './board.js';
import type { BoardTaskRecord } from '../ports/index.js';
import { defineTool, unlisted } from '../tools/tool-contract.js';
import type { AvailabilityContext, GatewayTool, ToolContext } from '../ports/tools.js';
import { asToolResult } from '../tools/tool-contract.js';
import { choice, flag, key, number, text, textList } from '../tools/schema.js';

const actor = (context: ToolContext): BoardActor => ({
  kind: 'agent',
  agentId: context.agentId,
  sessionKey: context.sessionKey,
  ...(context.conversation ? { conversation: context.conversation } : {}),
});

/** A short form of a task for the model: what it needs to decide, not every column. */
function brief(task: BoardTaskRecord) {
  return {
    id: task.id,
    title: task.title,
    state: task.state,
    assignee: task.assignee,
    priority: task.priority,
    ...(task.labels.length ? { labels: task.labels } : {}),
    ...(task.blockReason ? { blocked: `${task.blockKind}: ${task.blockReason}` } : {}),
    ...(task.result !== null ? { result: task.result } : {}),
  };
}

/**
 * The task this board session works on, and the token of the claim the dispatcher holds for this agent. A run
 * that a crash cut short and recovery runs again may end the task a second time: if this agent's latest attempt
 * already ended it, that answer is returned instead of a refusal.
 */
async function ownClaim(board: BoardService, context: ToolContext): Promise<{ taskId: string; token: number } | { already: unknown }> {
  const taskId = decodeURIComponent(context.sessionKey.split(':')[3] ?? '');
  const view = await board.taskView(taskId, { comments: 0 });
  if (!view) throw new SwitchboardError('BOARD_TASK_NOT_FOUND', `this session's board task "${taskId}" does not exist`);
  const { task } = view;
  const worker = `agent:${context.agentId}`;
  if (task.state === 'running' && task.claimWorker === worker) return { taskId: task.id, token: task.token };
  const last = view.attempts.at(-1);
  if (last?.worker === worker && last.token === task.token && ['completed', 'review', 'blocked'].includes(last.outcome ?? '')) {
    return { already: { task: brief(task), note: `this session already ended the task (${last.outcome}); nothing changed` } };
  }
  throw new SwitchboardError(
    'CLAIM_LOST',
    `board task ${task.id} is ${task.state} and no longer claimed for you; nothing was changed. Stop working on it.`,
  );
}

/** With no agent named in `board.agents`, only the worker tools exist (offered in board sessions alone). */
export function createBoardTools(board: BoardService, agentPatterns: readonly string[]): GatewayTool[] {
  const coordinator = async (session: AvailabilityContext) => matchesAny(session.agentId, agentPatterns);
  const worker = ['board'] as const;
  const tools = [
    defineTool({
      name: 'board_create',
      effects: true,
      description: 'Put a task on the shared board for a worker (an agent id, a worker name, or anyone).',
      available: coordinator,
      parameters: z.object({
        title: text(),
        body: text().optional(),
        assignee: text().optional(),
        dependsOn: textList(0, 50, 'task ids').optional(),
        key: unlisted(key().optional()),
        board: unlisted(text().optional()),
        priority: unlisted(number(-1000, 1000).optional()),
        labels: unlisted(textList(0, 20).optional()),
        triage: unlisted(flag().optional()),
      }),
      execute: (args, context) =>
        asToolResult(async () => {
          // Without a key, the ledger's key for this call: a retried run creates nothing twice.
          const { task, created, warning } = await board.create(
            { ...args, idempotencyKey: args.key ?? context.idempotencyKey },
            actor(context),
          );
          return { created, task: brief(task), ...(warning ? { warning } : {}) };
        }),
    }),
    defineTool({
      name: 'board_list',
      description: 'List board tasks.',
      available: coordinator,
      parameters: z.object({
        state: choice(BOARD_STATES).optional(),
        assignee: text().optional(),
        board: unlisted(text().optional()),
        limit: unlisted(number(1, 200).optional()),
      }),
      execute: (args, context) =>
        asToolResult(async () => ({
          tasks: (
            await board.list(
              { board: args.board, states: args.state ? [args.state] : undefined, assignee: args.assignee, limit: args.limit ?? 50 },
              actor(context),
            )
          ).map(brief),
        })),
    }),
    defineTool({
      name: 'board_show',
      description: 'One task with its dependencies, comments and attempts.',
      available: coordinator,
      parameters: z.object({ taskId: text() }),
      execute: (args, context) =>
        asToolResult(async () => {
          const view = await board.view(args.taskId, actor(context), 10);
          return {
            task: { ...brief(view.task), body: view.task.body },
            dependsOn: view.dependsOn,
            comments: view.comments.map((c) => `${c.author}: ${c.body}`),
            attempts: view.attempts.map((a) => `${a.attempt} ${a.worker}: ${a.outcome ?? 'running'}${a.error ? ` (${a.error})` : ''}`),
          };
        }),
    }),
    defineTool({
      name: 'board_comment',
      effects: true,
      description: 'Comment on a board task.',
      available: async (session) => parseSessionKey(session.sessionKey)?.kind === 'board' || (await coordinator(session)),
      parameters: z.object({ taskId: text().optional(), body: text() }),
      execute: (args, context) =>
        asToolResult(async () => {
          if (parseSessionKey(context.sessionKey)?.kind === 'board' && !args.taskId) {
            const own = await ownClaim(board, context);
            if ('already' in own)
              throw new SwitchboardError('CLAIM_LOST', 'this task has ended; comment on it with taskId from a session of yours');
            return {
              comment: await board.comment(
                own.taskId,
                args.body,
                { kind: 'worker', name: `agent:${context.agentId}`, token: own.token },
                context.idempotencyKey,
              ),
            };
          }
          if (!args.taskId) throw new SwitchboardError('INVALID_REQUEST', 'taskId is required outside a board task session');
          return { comment: await board.comment(args.taskId, args.body, actor(context), context.idempotencyKey) };
        }),
    }),
    defineTool({
      name: 'board_link',
      // Linking the same pair again changes nothing, so a retry needs no key of its own.
      effects: true,
      description: 'Make a task wait for another task to be done.',
      available: coordinator,
      parameters: z.object({ taskId: text(), dependsOn: text() }),
      execute: (args, context) =>
        asToolResult(async () => ({ task: brief(await board.link(args.taskId, args.dependsOn, actor(context))) })),
    }),
    defineTool({
      name: 'board_review',
      effects: true,
      description: 'Approve a task in review, or send it back with a comment.',
      available: coordinator,
      parameters: z.object({ taskId: text(), approve: flag(), comment: text().optional() }),
      // `board_review:approve` asks before a task is accepted as done; `board_review:reject` before it goes back.
      approval: { subject: (args) => (args.approve ? 'approve' : 'reject'), editable: true },
      execute: (args, context) =>
        asToolResult(async () => ({
          task: brief(await board.review(args.taskId, args.approve, actor(context), args.comment, context.idempotencyKey)),
        })),
    }),
    ...(['board_complete', 'board_request_review'] as const).map((name) =>
      defineTool({
        name,
        // The claim's token fences these, and ownClaim answers a retry with what the first call did.
        effects: true,
        sessionKinds: worker,
        description:
          name === 'board_complete'
            ? "Finish this session's board task with its result."
            : "Send this session's board task to review with its result.",
        parameters: z.object({ result: text(), summary: unlisted(text().optional()) }),
        execute: (args, context) =>
          asToolResult(async () => {
            const own = await ownClaim(board, context);
            if ('already' in own) return own.already;
            return {
              task: brief(
                await board.complete(own.taskId, own.token, args.result, {
                  summary: args.summary,
                  review: name === 'board_request_review',
                }),
              ),
            };
          }),
      }),
    ),
    defineTool({
      name: 'board_block',
      effects: true,
      sessionKinds: worker,
      description: "Stop this session's board task and say why.",
      parameters: z.object({ kind: choice(BLOCK_KINDS), reason: text() }),
      approval: { subject: (args) => String(args.kind) },
      execute: (args, context) =>
        asToolResult(async () => {
          const own = await ownClaim(board, context);
          if ('already' in own) return own.already;
          return { task: brief(await board.block(own.taskId, own.token, args.kind, args.reason)) };
        }),
    }),
  ];
  if (agentPatterns.length > 0) return tools;
  return tools.flatMap((tool) => (tool.sessionKinds ? [tool] : tool.name === 'board_comment' ? [{ ...tool, sessionKinds: worker }] : []));
}
