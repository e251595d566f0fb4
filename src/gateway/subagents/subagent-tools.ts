/**
 * sessions_spawn and subagents (seed 002 section 2.2, seed 003): delegation with a handle, and the
 * parent's view of its children. Failures are data, as with the session tools.
 */
import { z } from 'zod';
import { SwitchboardError } from '../../core/errors.js';
import { resolveLimits, SUBAGENT_ROLES } from '../../core/subagent.js';
import type { SwitchboardConfig } from '../../config/schema.js';
import type { SessionDirectory } from '../messaging/session-directory.js';
import type { Subagents } from './subagents.js';
import type { SubagentRecord } from '../../ports/index.js';
import { asToolResult } from '../../tools/tool-contract.js';
import { choice, flag, key, number, text, textList } from '../../tools/schema.js';
import { defineTool, unlisted } from '../../tools/tool-contract.js';
import type { GatewayTool, ToolContext } from '../../ports/tools.js';

const MAX_WAIT_MS = 3_600_000;
const ACTIONS = ['list', 'wait', 'kill', 'steer', 'followup', 'interrupt', 'result'] as const;

function target(args: { target?: string }): string {
  if (!args.target)
    throw new SwitchboardError('INVALID_REQUEST', 'target is required: the childSessionKey, subagentId or label of one of your sub-agents');
  return args.target;
}

/** Some models pass the handle as JSON text rather than an object. */
function parseHandle(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

const subagentsArgs = z.object({
  action: choice(ACTIONS),
  target: text().optional(),
  message: text().optional(),
  reason: unlisted(text().optional()),
  timeoutMs: number(0, MAX_WAIT_MS).optional(),
  targets: unlisted(textList(1, 100).optional()),
  mode: unlisted(choice(['all', 'any']).optional()),
  maxFailures: unlisted(number(0, 10_000).optional()),
  handle: unlisted(
    z.union([z.record(z.string(), z.unknown()), z.string()], { error: 'must be the handle sessions_spawn returned' }).optional(),
  ),
  recursive: unlisted(flag().optional()),
});

/**
 * `listRuntimes`: `runtime` and `agent` are shown to the model (agents whose `allowRuntimes` names some runtime get
 * this variant); otherwise they are still accepted but not shown, since every character is sent with every call.
 */
export function createSubagentTools(
  subagents: Subagents,
  directory: Pick<SessionDirectory, 'hasSpawned'>,
  { listRuntimes = false }: { listRuntimes?: boolean } = {},
): GatewayTool[] {
  const shown = <T extends z.ZodType>(schema: T) => (listRuntimes ? schema : unlisted(schema));
  return [
    defineTool({
      name: 'sessions_spawn',
      effects: true,
      description: 'Give a task to a new sub-agent; its result comes later.',
      parameters: z.object({
        task: text(),
        agentId: text().optional(),
        label: text().optional(),
        role: unlisted(choice(SUBAGENT_ROLES).optional()),
        context: unlisted(text().optional()),
        model: unlisted(text().optional()),
        tools: unlisted(textList(0, 100).optional()),
        timeoutSeconds: unlisted(number(1, 86_400).optional()),
        correlationId: unlisted(key().optional()),
        cwd: unlisted(text().optional()),
        worktree: unlisted(flag().optional()),
        runtime: shown(choice(['model', 'acp', 'process']).optional()),
        agent: shown(text().optional()),
      }),
      approval: {
        // `sessions_spawn:acp:*` asks before a sub-agent on an ACP agent: `<runtime>:<agent>`, or `model:<agentId>`.
        subject: (args) => `${args.runtime ?? 'model'}:${args.agent ?? args.agentId ?? ''}`,
        details: async (args) => ({ task: args.task, runtime: args.runtime ?? 'model', agent: args.agent ?? args.agentId ?? null }),
        editable: true,
      },
      execute: (args, context) =>
        asToolResult(async () => {
          const spawned = await subagents.spawn(
            { sessionKey: context.sessionKey, agentId: context.agentId, idempotencyKey: context.idempotencyKey, call: context.call },
            args,
          );
          // The signed handle (about 430 characters) would stay in this session's history for good; the
          // model names its sub-agent by id or label, and the gateway checks it is this session's own.
          return {
            status: spawned.status,
            subagentId: spawned.handle.subagentId,
            childSessionKey: spawned.childSessionKey,
            ...(spawned.existing ? { existing: true } : {}),
          };
        }),
    }),
    defineTool({
      name: 'subagents',
      effects: true,
      available: (session) => directory.hasSpawned(session),
      description:
        "List, wait for (timeoutMs), kill, interrupt, steer or give a followup task to (target, message) your sub-agents, or get one's result (target).",
      parameters: subagentsArgs,
      execute: (args, context) => asToolResult(() => act(subagents, args, context)),
    }),
  ];
}

async function act(subagents: Subagents, args: z.infer<typeof subagentsArgs>, context: ToolContext): Promise<unknown> {
  const self = context.sessionKey;
  switch (args.action) {
    case 'list':
      return { subagents: await subagents.list(self, { recursive: args.recursive }) };
    case 'wait': {
      if (args.timeoutMs === undefined) throw new SwitchboardError('INVALID_REQUEST', `timeoutMs is required (0 to ${MAX_WAIT_MS})`);
      let records: SubagentRecord[];
      if (args.targets) records = await Promise.all([...new Set(args.targets)].map((name) => subagents.find(name, self)));
      else {
        const children = (await subagents.list(self)).filter((child) => child.state === 'pending' || child.state === 'running');
        records = await Promise.all(children.map((child) => subagents.find(child.subagentId, self)));
      }
      if (records.length === 0)
        return { status: 'ok', children: [], succeeded: 0, running: 0, failed: [], note: 'you have no sub-agents running' };
      return subagents.wait(records, {
        mode: args.mode ?? 'all',
        timeoutMs: args.timeoutMs,
        maxFailures: args.maxFailures,
        signal: context.signal,
      });
    }
    case 'kill': {
      const record = await subagents.find(target(args), self);
      // Its parent is told unless it is the caller: an orchestrator whose worker was killed from above would wait for good.
      return { status: 'killed', cancelled: await subagents.kill(record, `killed by ${self}`, record.parentSession !== self) };
    }
    case 'steer': {
      const record = await subagents.find(target(args), self);
      return subagents.steer(record, { sessionKey: self, agentId: context.agentId }, args.message, context.idempotencyKey);
    }
    case 'followup': {
      const record = await subagents.find(target(args), self);
      const from = { sessionKey: self, agentId: context.agentId, idempotencyKey: context.idempotencyKey, call: context.call };
      return subagents.followup(record, from, args.message, 'followup', context.signal);
    }
    case 'interrupt': {
      const record = await subagents.find(target(args), self);
      const by = { sessionKey: self, agentId: context.agentId, idempotencyKey: context.idempotencyKey, call: context.call };
      return subagents.interrupt(record, by, { message: args.message, reason: args.reason, signal: context.signal });
    }
    case 'result':
      // By target (one of this session's own sub-agents), or by a signed handle from elsewhere.
      if (args.handle === undefined) return subagents.result(subagents.handleOf(await subagents.find(target(args), self)));
      return subagents.result(typeof args.handle === 'string' ? parseHandle(args.handle) : args.handle);
  }
}

/**
 * sessions_spawn as each agent is offered it: `runtime` and `agent` are shown only to an agent allowed an external
 * runtime (asked at each run, so that a reload applies). Chosen here, so that a run's tools are gathered without a
 * call up into the composition root.
 */
export function spawnToolFor(
  config: SwitchboardConfig,
  subagents: Subagents,
  directory: Pick<SessionDirectory, 'hasSpawned'>,
): (agentId: string) => Promise<readonly GatewayTool[]> {
  const [spawnTool] = createSubagentTools(subagents, directory);
  const [runtimeSpawnTool] = createSubagentTools(subagents, directory, { listRuntimes: true });
  const allowsRuntimes = (agentId: string) =>
    resolveLimits(config.agents.defaults.subagents, config.agents.list.find((agent) => agent.id === agentId)?.subagents, agentId)
      .allowRuntimes.length > 0;
  return async (agentId) => [allowsRuntimes(agentId) ? runtimeSpawnTool : spawnTool];
}
