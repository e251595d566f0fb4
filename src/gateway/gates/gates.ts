/**
 * The door's gates role (ports/gateway.ts `Gates`): approval requests listed, shown and answered, from the CLI, the
 * control API, the console or an editor; and every budget's spend against its cap. An answer is a compare-and-set on
 * the request's row, so of two answers from two gateways one takes effect and the other is told it came second; its
 * journal event wakes the run that waits on it, wherever that run is leased.
 */
import { SwitchboardError } from '../../core/errors.js';
import { parseToolArgs } from '../../tools/tool-contract.js';
import type {
  ApprovalDecision,
  ApprovalRecord,
  ApprovalStatus,
  ApprovalStore,
  BudgetAmount,
  BudgetCap,
  BudgetReservation,
  BudgetSpend,
  BudgetStore,
  Clock,
  EventRecord,
} from '../../ports/index.js';
import type { RuntimeQuestion } from '../../ports/runtimes.js';
import type { BudgetView } from '../../ports/gateway.js';
import type { GatewayTool } from '../../ports/tools.js';
import type { SwitchboardConfig } from '../../config/schema.js';
import type { Wakeups } from '../../kit/wait-until.js';
import { approvalId, askPerson } from './approval-gate.js';
import { finite, runCaps, type RaiseAnswer } from './budget-meter.js';

export interface GatesDeps {
  config: SwitchboardConfig;
  approvals: ApprovalStore;
  budgets: BudgetStore;
  clock: Clock;
  wakeups: Wakeups;
  published: (events: readonly EventRecord[]) => void;
  /** An agent's tools, to check edited arguments against the tool's schema. */
  toolsFor: (agentId: string) => Promise<readonly GatewayTool[]>;
}

/** What a raise asks for: half as much again as the cap, and at least room for the call that was refused. */
function proposedLimit(refused: Extract<BudgetReservation, { ok: false }>, wanted: BudgetAmount): Partial<BudgetAmount> {
  const { limit, spent, reserved } = refused;
  const raise = (cap: number, used: number, want: number) =>
    Number.isFinite(cap) ? Math.max(Math.ceil(cap * 1.5), used + want) : undefined;
  const tokens = raise(limit.tokens, spent.tokens + reserved.tokens, wanted.tokens);
  const costMicros = raise(limit.costMicros, spent.costMicros + reserved.costMicros, wanted.costMicros);
  return { ...(tokens === undefined ? {} : { tokens }), ...(costMicros === undefined ? {} : { costMicros }) };
}

export class GatewayGates {
  constructor(private readonly deps: GatesDeps) {}

  listApprovals(filter: { status?: ApprovalStatus; sessionKey?: string; limit?: number }): Promise<ApprovalRecord[]> {
    return this.deps.approvals.list(filter);
  }

  async getApproval(id: string): Promise<ApprovalRecord> {
    const approval = await this.deps.approvals.get(id);
    if (!approval)
      throw new SwitchboardError('APPROVAL_NOT_FOUND', `no approval request ${id}; list them with "switchboard approvals list"`);
    return approval;
  }

  pendingApprovals(): Promise<number> {
    return this.deps.approvals.pendingCount();
  }

  async decideApproval(id: string, decision: ApprovalDecision): Promise<ApprovalRecord> {
    const approval = await this.getApproval(id);
    if (approval.status !== 'pending') throw answeredAlready(approval);
    if (decision.editedArgs !== undefined) {
      if (!decision.approve) throw new SwitchboardError('INVALID_REQUEST', 'edited arguments go with approve, not deny');
      await this.checkEdited(approval, decision.editedArgs);
    }
    // An approved raise is written with the answer, in its transaction: the run the answer wakes finds the room, and a
    // refused or late answer raises nothing.
    const raise =
      approval.kind === 'budget' && decision.approve
        ? { key: approval.subject, limit: (decision.editedArgs ?? approval.args) as Partial<BudgetAmount> }
        : undefined;
    const decided = await this.deps.approvals.decide(id, decision, this.deps.clock.now(), raise);
    if (!decided) {
      // Answered or closed meanwhile, or past its expiry: an expired request is marked so, and no answer takes effect.
      const expired = await this.deps.approvals.expire(id, this.deps.clock.now());
      if (expired) this.deps.published([expired.event]);
      throw answeredAlready(expired?.approval ?? (await this.deps.approvals.get(id)) ?? approval);
    }
    this.deps.published([decided.event]);
    return decided.approval;
  }

  /**
   * A model call at a cap under `budgets.onLimit: ask`: a request to raise the cap, and the wait for its answer (which
   * suspends the run where it may), or for another request's raise of the same cap.
   */
  async askToRaise(
    run: { runId: string; sessionKey: string; agentId: string; signal: AbortSignal },
    refused: Extract<BudgetReservation, { ok: false }>,
    wanted: BudgetAmount,
  ): Promise<RaiseAnswer> {
    const proposed = proposedLimit(refused, wanted);
    const limit = finite(refused.limit);
    const key = refused.cap.key;
    const answer = await askPerson(
      this.gateDeps(),
      {
        // The same request for the same cap at the same limit: a resumed run finds its own, a raised cap asks anew.
        id: approvalId(run.runId, -1, -1, { budget: key, limit }),
        kind: 'budget',
        agentId: run.agentId,
        sessionKey: run.sessionKey,
        runId: run.runId,
        step: -1,
        index: -1,
        toolCallId: null,
        subject: key,
        args: proposed,
        details: async () => ({ source: refused.cap.source, spent: refused.spent, reserved: refused.reserved, limit, wanted }),
        reason: `budget ${key} (${refused.cap.source}) is used up; raise it to ${describe(proposed)}?`,
        editable: true,
        ttlMs: this.deps.config.approvals.expiresAfterSeconds * 1000,
        onExpiry: 'deny',
      },
      run.signal,
      // Another run's raise of the same cap (its answer's event names the cap) is room for this one too.
      { keys: [`budget:${key}`], settled: async () => raisedAbove((await this.deps.budgets.spend([key]))[0], limit) },
    );
    if (!answer) {
      // Nothing waits for this request any more: it is withdrawn, so that approving it later raises nothing twice.
      const id = approvalId(run.runId, -1, -1, { budget: key, limit });
      const withdrawn = await this.deps.approvals.withdraw(id, 'another request raised the cap', this.deps.clock.now());
      if (withdrawn) this.deps.published([withdrawn.event]);
      return { raised: true, why: 'the cap was raised by another request' };
    }
    if (answer.status === 'approved') return { raised: true, why: `${answer.decidedBy} raised it` };
    if (answer.status === 'expired') return { raised: false, why: `nobody answered the request to raise it (${answer.id}) in time` };
    return {
      raised: false,
      why: `${answer.decidedBy ?? 'a person'} refused to raise it (${answer.id})${answer.note ? `: ${answer.note}` : ''}`,
    };
  }

  /**
   * A question from an external runtime's run (an ACP permission set to `ask`): a request, and the wait for its answer in
   * memory (the child process waits on it, so the run cannot suspend).
   */
  async askFor(
    run: { runId: string; sessionKey: string; agentId: string; signal: AbortSignal },
    question: RuntimeQuestion,
  ): Promise<{ approved: boolean; why: string }> {
    const answer = (await askPerson(
      this.gateDeps(),
      {
        id: approvalId(run.runId, 0, question.index, { subject: question.subject, args: question.args }),
        kind: 'tool',
        agentId: run.agentId,
        sessionKey: run.sessionKey,
        runId: run.runId,
        step: 0,
        index: question.index,
        toolCallId: null,
        subject: question.subject,
        args: question.args,
        details: async () => question.details,
        reason: question.reason,
        editable: false,
        ttlMs: this.deps.config.approvals.expiresAfterSeconds * 1000,
        onExpiry: this.deps.config.approvals.onExpiry,
      },
      run.signal,
    ))!;
    const approved = answer.status === 'approved' || (answer.status === 'expired' && answer.onExpiry === 'allow');
    const by =
      answer.status === 'expired'
        ? `nobody answered approval request ${answer.id} in time (approvals.expiresAfterSeconds)`
        : `${answer.decidedBy} ${answer.status} approval request ${answer.id}`;
    return { approved, why: `${by}${answer.note ? `: ${answer.note}` : ''}` };
  }

  private gateDeps() {
    return { ...this.deps, store: this.deps.approvals };
  }

  /** Every cap the config sets, with what it spent today (daily caps) or so far, and the newest keys of the per-session ones. */
  async budgetStatus(): Promise<BudgetView[]> {
    const { config, budgets, clock } = this.deps;
    const day = new Date(clock.now()).toISOString().slice(0, 10);
    const caps: BudgetCap[] = [];
    const agents = Object.keys(config.budgets.agents).includes('*')
      ? config.agents.list.map((agent) => agent.id)
      : Object.keys(config.budgets.agents);
    for (const agentId of agents)
      caps.push(
        ...runCaps(config, { agentId, sessionKey: '', rootSession: '', provenance: [] }, clock.now()).filter((cap) =>
          cap.key.startsWith('agent:'),
        ),
      );
    for (const peer of Object.keys(config.budgets.peers).filter((name) => name !== '*'))
      caps.push(
        ...runCaps(config, { agentId: '', sessionKey: '', rootSession: '', provenance: [{ kind: 'a2a', peer }] }, clock.now()).filter(
          (cap) => cap.key.startsWith('peer:'),
        ),
      );
    // The MCP client's own cap (mcpServer.budget, docs/mcp-server.md), today's.
    const caller = { kind: 'user' as const, channel: 'mcp', peer: config.mcpServer.caller };
    caps.push(
      ...runCaps(config, { agentId: '', sessionKey: '', rootSession: '', provenance: [caller] }, clock.now()).filter((cap) =>
        cap.key.startsWith('mcp:'),
      ),
    );
    const views: BudgetView[] = [];
    const spends = new Map((await budgets.spend(caps.map((cap) => cap.key))).map((spend) => [spend.key, spend]));
    for (const cap of caps) views.push(view(cap, spends.get(cap.key)));
    const perKey: [string, 'session' | 'subagentTree' | 'boardTask'][] = [
      ['session:', 'session'],
      ['tree:', 'subagentTree'],
      ['task:', 'boardTask'],
    ];
    for (const [prefix, source] of perKey) {
      const limit = config.budgets[source];
      if (!limit) continue;
      for (const spend of await budgets.spendLike(prefix, 50))
        views.push(view({ key: spend.key, source: `budgets.${source}`, tokens: limit.tokens, costMicros: micros(limit.cost) }, spend));
    }
    // Peers without a cap of their own, under `*`: today's keys.
    if (config.budgets.peers['*']) {
      const shown = new Set(views.map((row) => row.key));
      for (const spend of await budgets.spendLike('peer:', 50)) {
        if (shown.has(spend.key) || !spend.key.endsWith(`:${day}`)) continue;
        const limit = config.budgets.peers['*'];
        views.push(view({ key: spend.key, source: 'budgets.peers.*', tokens: limit.tokens, costMicros: micros(limit.cost) }, spend));
      }
    }
    return views;
  }

  private async checkEdited(approval: ApprovalRecord, edited: unknown): Promise<void> {
    if (!approval.editable)
      throw new SwitchboardError('INVALID_REQUEST', `approval ${approval.id} (${approval.subject}) does not take edited arguments`);
    if (typeof edited !== 'object' || edited === null || Array.isArray(edited))
      throw new SwitchboardError('INVALID_REQUEST', 'edited arguments must be a JSON object');
    if (approval.kind === 'budget') {
      const { tokens, costMicros, ...rest } = edited as Record<string, unknown>;
      const shape = 'a raised budget is { "tokens": <integer>, "costMicros": <integer> }, each above the cap it raises';
      if (Object.keys(rest).length || [tokens, costMicros].some((value) => value !== undefined && !Number.isInteger(value)))
        throw new SwitchboardError('INVALID_REQUEST', shape);
      // Each side the cap limits must go up, past what it spent and holds: a raise that leaves no room raises nothing.
      const limit = (approval.details.limit ?? {}) as Partial<BudgetAmount>;
      const spend = (await this.deps.budgets.spend([approval.subject]))[0];
      for (const side of ['tokens', 'costMicros'] as const) {
        const given = (edited as Partial<BudgetAmount>)[side];
        if (limit[side] === undefined) continue;
        const floor = Math.max(limit[side]!, (spend?.spent[side] ?? 0) + (spend?.reserved[side] ?? 0));
        if (given === undefined || given <= floor)
          throw new SwitchboardError('INVALID_REQUEST', `${shape}: ${side} must be above ${floor} (the cap, or what it spent and holds)`);
      }
      return;
    }
    const tool = (await this.deps.toolsFor(approval.agentId)).find((candidate) => candidate.name === approval.subject);
    if (!tool) throw new SwitchboardError('INVALID_REQUEST', `agent "${approval.agentId}" has no tool ${approval.subject} now`);
    const parsed = parseToolArgs(tool.parameters, edited);
    if (!parsed.ok) throw new SwitchboardError('INVALID_REQUEST', `the edited arguments do not fit ${tool.name}'s schema: ${parsed.error}`);
  }
}

/** Whether a cap's stored limit (raised) is above `limit` on a side `limit` sets. */
function raisedAbove(spend: BudgetSpend | undefined, limit: Partial<BudgetAmount>): boolean {
  if (!spend) return false;
  return (['tokens', 'costMicros'] as const).some((side) => limit[side] !== undefined && (spend.raised[side] ?? 0) > limit[side]!);
}

const micros = (cost: number | undefined) => (cost === undefined ? undefined : Math.round(cost * 1_000_000));

function view(cap: BudgetCap, spend: BudgetSpend | undefined): BudgetView {
  const limit = {
    ...(cap.tokens === undefined ? {} : { tokens: Math.max(cap.tokens, spend?.raised.tokens ?? 0) }),
    ...(cap.costMicros === undefined ? {} : { costMicros: Math.max(cap.costMicros, spend?.raised.costMicros ?? 0) }),
  };
  return {
    key: cap.key,
    source: cap.source,
    limit,
    spent: spend?.spent ?? { tokens: 0, costMicros: 0 },
    reserved: spend?.reserved ?? { tokens: 0, costMicros: 0 },
  };
}

function answeredAlready(approval: ApprovalRecord): SwitchboardError {
  if (approval.status === 'closed')
    return new SwitchboardError(
      'APPROVAL_CLOSED',
      `approval request ${approval.id} is closed: run ${approval.runId} that asked has ended without an answer, so nothing waits for it`,
      { status: approval.status },
    );
  return new SwitchboardError(
    'APPROVAL_ANSWERED',
    `approval request ${approval.id} is ${approval.status} already${approval.decidedBy ? ` (by ${approval.decidedBy})` : ''}: the first answer stands`,
    { status: approval.status },
  );
}

function describe(limit: Partial<BudgetAmount>): string {
  const parts = [];
  if (limit.tokens !== undefined) parts.push(`${limit.tokens} tokens`);
  if (limit.costMicros !== undefined) parts.push(`$${(limit.costMicros / 1e6).toFixed(4)}`);
  return parts.join(' and ');
}
