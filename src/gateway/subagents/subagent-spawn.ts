/**
 * Spawning a sub-agent (sessions_spawn): the limits it is spawned under, the refusals (core/spawn-policy.ts), its
 * workdir or worktree, and the child's session, record and task written in one transaction that counts the live
 * children again. A repeated call with the same correlation id answers the child the first one made.
 */
import { SwitchboardError } from '../../core/errors.js';
import { parseSessionKey } from '../../core/session-key.js';
import {
  childLimitRefusal,
  childTools,
  runtimeRefusal,
  spawnRefusal,
  type ResolvedLimits,
  type SpawnAsk,
} from '../../core/spawn-policy.js';
import { sandboxedBy } from '../../core/session-access.js';
import type { RuntimeKind } from '../../core/session-key.js';
import { LIVE_SUBAGENT_STATES, isSettled, resolveLimits, signHandle, type SubagentHandle } from '../../core/subagent.js';
import type { SubagentRecord } from '../../ports/index.js';
import type { Spawner, SubagentDeps } from './subagent-types.js';
import type { SpawnRequest, SpawnResult } from '../../ports/gateway.js';
import { prepareWorkdir } from './workdir.js';
import { removeWorktree } from './worktrees.js';
import { nodeHashing } from '../../kit/hashing.js';

/** Creates sub-agents: checks each spawn against its limits and policy, prepares its workdir and stores the child, and signs its handle. */
export class SubagentSpawner {
  constructor(
    private readonly deps: Pick<
      SubagentDeps,
      | 'config'
      | 'store'
      | 'agents'
      | 'clock'
      | 'ids'
      | 'secret'
      | 'worktreeRoot'
      | 'wake'
      | 'toolNames'
      | 'checkModel'
      | 'validateMessage'
      | 'isStopping'
      | 'afterWrite'
      | 'log'
    >,
  ) {}

  /** Per-agent settings over `agents.defaults.subagents`. */
  private limits(agentId: string) {
    return resolveLimits(this.deps.config.agents.defaults.subagents, this.deps.agents.get(agentId).config.subagents, agentId);
  }

  async spawn(spawner: Spawner, request: SpawnRequest): Promise<SpawnResult> {
    const { store } = this.deps;
    if (this.deps.isStopping())
      throw new SwitchboardError('GATEWAY_STOPPING', 'the gateway is shutting down; spawn again once it has restarted');
    const task = this.deps.validateMessage(request.task);
    const correlationId = request.correlationId ?? spawner.idempotencyKey;
    const repeated = await store.subagents.findByCorrelation(spawner.sessionKey, correlationId);
    if (repeated) return { ...this.accepted(repeated), existing: true };

    const limits = this.limits(spawner.agentId);
    const parent = await store.subagents.getBySession(spawner.sessionKey);
    if (parent && isSettled(parent.state)) {
      // Its children's results would have nobody to go to.
      throw new SwitchboardError(
        'SUBAGENT_NOT_RUNNING',
        `sub-agent ${parent.sessionKey} has already ended (${parent.state}); it cannot spawn sub-agents any more`,
      );
    }
    const ask: SpawnAsk = {
      spawnerAgent: spawner.agentId,
      depth: (parseSessionKey(spawner.sessionKey)?.depth ?? 0) + 1,
      role: request.role ?? 'leaf',
      agentId: request.agentId ?? spawner.agentId,
      tools: request.tools,
      parentTools: await this.deps.toolNames(spawner.sessionKey),
      timeoutSeconds: request.timeoutSeconds ?? limits.runTimeoutSeconds,
    };
    const refused = spawnRefusal(ask, limits);
    if (refused) throw refused;
    const agent = this.deps.agents.get(ask.agentId);
    const runtime = this.runtimeOf(request, spawner, agent.workspace !== undefined || request.worktree === true, limits);
    // A cheap early refusal, before a worktree is made; the spawn's transaction counts again and decides.
    const live = await store.subagents.count({ parentSession: spawner.sessionKey, states: [...LIVE_SUBAGENT_STATES] });
    if (live >= limits.maxChildrenPerAgent) throw childLimitRefusal(live, limits);
    if (request.model) this.deps.checkModel(request.model);
    const id = this.deps.ids.next();
    const place = {
      workspace: agent.workspace,
      cwd: request.cwd,
      worktree: request.worktree,
      worktreeRoot: this.deps.worktreeRoot,
      subagentId: id,
      agentId: ask.agentId,
    };
    const { workdir, worktree } = await prepareWorkdir(place);
    // Whatever the spawn's transaction decides but a new child, the worktree made for it goes.
    const dropWorktree = async () => {
      if (worktree) await removeWorktree(worktree).catch((failure) => this.deps.log(String(failure)));
    };
    const child = { id, task, correlationId, ask, parent, workdir, worktree, runtime };
    const outcome = await this.storeChild(spawner, request, child, limits).catch(async (error: unknown) => {
      await dropWorktree();
      throw error;
    });
    if ('refused' in outcome) {
      await dropWorktree();
      throw childLimitRefusal(outcome.refused.live, limits);
    }
    const { subagent, created } = outcome;
    if (!created) {
      // Another call with the same correlationId won the race: ours made nothing but, maybe, a worktree.
      await dropWorktree();
      return { ...this.accepted(subagent), existing: true };
    }
    this.deps.afterWrite();
    this.deps.wake(subagent.sessionKey);
    return this.accepted(subagent);
  }

  /** The child's session, its record and its task, in one transaction that counts the live children again. */
  private storeChild(
    spawner: Spawner,
    request: SpawnRequest,
    child: {
      id: string;
      task: string;
      correlationId: string;
      ask: SpawnAsk;
      parent: SubagentRecord | undefined;
      workdir: string | null;
      worktree: SubagentRecord['worktree'];
      runtime: { kind: RuntimeKind; name: string } | undefined;
    },
    limits: ResolvedLimits,
  ) {
    const { store, clock, ids } = this.deps;
    const { id, task, ask, parent } = child;
    const segments = spawner.sessionKey.split(':').slice(2);
    const last = child.runtime?.kind ?? 'subagent';
    const sessionKey = `agent:${ask.agentId}:${parent ? `${segments.join(':')}:` : ''}${last}:${id}`;
    const firstRunId = ids.next();
    const text = request.context?.trim() ? `${task}\n\nContext from your parent:\n${request.context.trim()}` : task;
    const record = {
      id,
      sessionKey,
      parentSession: spawner.sessionKey,
      rootSession: parent?.rootSession ?? spawner.sessionKey,
      agentId: ask.agentId,
      depth: ask.depth,
      role: ask.role,
      label: request.label ?? null,
      task,
      correlationId: child.correlationId,
      firstRunId,
      model: child.runtime ? null : (request.model ?? null),
      // The harness brings its own tools.
      tools: child.runtime ? [] : childTools(ask),
      timeoutSeconds: ask.timeoutSeconds,
      workdir: child.workdir,
      worktree: child.worktree,
      runtime: child.runtime ? `${child.runtime.kind}:${child.runtime.name}` : null,
    };
    const provenance = {
      kind: 'subagent_task' as const,
      channel: 'internal',
      sourceSession: spawner.sessionKey,
      sourceAgent: spawner.agentId,
      sourceTool: 'sessions_spawn',
      subagent: { id, runId: firstRunId },
    };
    const input = { id: ids.next(), sessionKey, idempotencyKey: `spawn:${id}`, mode: 'followup' as const, text, provenance };
    return store.subagents.spawn(record, input, clock.now(), { maxLive: limits.maxChildrenPerAgent, call: spawner.call });
  }

  /** The external runtime a spawn asks for, checked (configured, allowed, not sandboxed, with a workdir); undefined for a model. */
  private runtimeOf(
    request: SpawnRequest,
    spawner: Spawner,
    hasWorkdir: boolean,
    limits: ResolvedLimits,
  ): { kind: RuntimeKind; name: string } | undefined {
    const kind = request.runtime ?? 'model';
    if (kind === 'model') {
      if (request.agent)
        throw new SwitchboardError('INVALID_REQUEST', 'agent names an external runtime: give it with runtime "acp" or "process"');
      return undefined;
    }
    if (!request.agent)
      throw new SwitchboardError(
        'INVALID_REQUEST',
        `runtime "${kind}" needs agent: the name of one of ${kind === 'acp' ? 'acp.agents' : 'runtimes'} to run the task`,
      );
    if (request.agentId && request.agentId !== spawner.agentId)
      throw new SwitchboardError('INVALID_REQUEST', `a ${kind} sub-agent belongs to its spawner's agent; leave agentId out`);
    const { config } = this.deps;
    const refused = runtimeRefusal(
      {
        spawnerAgent: spawner.agentId,
        kind,
        name: request.agent,
        configured: Object.keys(kind === 'acp' ? config.acp.agents : config.runtimes),
        sandboxedBy: sandboxedBy(this.deps.agents.get(spawner.agentId).config, spawner.sessionKey),
        hasWorkdir,
      },
      limits,
    );
    if (refused) throw refused;
    return { kind, name: request.agent };
  }

  private accepted(record: SubagentRecord): SpawnResult {
    return { status: 'accepted', runId: record.firstRunId, childSessionKey: record.sessionKey, handle: this.handleOf(record) };
  }

  /** The signed handle of a sub-agent, as its spawn answered it. */
  handleOf(record: SubagentRecord): SubagentHandle {
    return signHandle(nodeHashing, this.deps.secret, {
      subagentId: record.id,
      parentSessionKey: record.parentSession,
      correlationId: record.correlationId,
      createdAt: record.createdAt,
      depth: record.depth,
      role: record.role,
    });
  }
}
