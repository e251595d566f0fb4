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
import { approvalId, awaitAnswer } from './approval-gate.js';
import { finite, runCaps } from './budget-meter.js';

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
    const decided = await this.deps.approvals.decide(id, decision, this.deps.clock.now());
    if (!decided) throw answeredAlready((await this.deps.approvals.get(id)) ?? approval);
    // A raised budget is raised before the run that waits on it hears the answer.
    if (decided.approval.kind === 'budget' && decided.approval.status === 'approved') {
      const limit = (decided.approval.editedArgs ?? decided.approval.args) as Partial<BudgetAmount>;
      await this.deps.budgets.raise(decided.approval.subject, limit, this.deps.clock.now());
    }
    this.deps.published([decided.event]);
    return decided.approval;
  }

  /**
   * A model call at a cap under `budgets.onLimit: ask`: a request to raise the cap, and the wait for its answer (which
   * suspends the run where it may). True when raised.
   */
  async askToRaise(
    run: { runId: string; sessionKey: string; agentId: string; signal: AbortSignal },
    refused: Extract<BudgetReservation, { ok: false }>,
    wanted: BudgetAmount,
  ): Promise<boolean> {
    const proposed = proposedLimit(refused, wanted);
    // The same request for the same cap at the same limit: a resumed run finds its own, a raised cap asks anew.
    const id = approvalId(run.runId, -1, hashIndex(`${refused.cap.key}:${JSON.stringify(finite(refused.limit))}`));
    let approval = await this.deps.approvals.get(id);
    if (!approval) {
      const made = await this.deps.approvals.request(
        {
          id,
          kind: 'budget',
          agentId: run.agentId,
          sessionKey: run.sessionKey,
          runId: run.runId,
          step: -1,
          index: -1,
          toolCallId: null,
          subject: refused.cap.key,
          args: proposed,
          details: { source: refused.cap.source, spent: refused.spent, reserved: refused.reserved, limit: finite(refused.limit), wanted },
          reason: `budget ${refused.cap.key} (${refused.cap.source}) is used up; raise it to ${describe(proposed)}?`,
          editable: true,
          ttlMs: this.deps.config.approvals.expiresAfterSeconds * 1000,
          onExpiry: 'deny',
        },
        this.deps.clock.now(),
      );
      if (made.event) this.deps.published([made.event]);
      approval = made.approval;
    }
    const answered = await awaitAnswer({ ...this.deps, store: this.deps.approvals }, approval, run.signal);
    return answered.status === 'approved';
  }

  /**
   * A question from an external runtime's run (an ACP permission set to `ask`): a request, and the wait for its answer in
   * memory (the child process waits on it, so the run cannot suspend).
   */
  async askFor(
    run: { runId: string; sessionKey: string; agentId: string; signal: AbortSignal },
    question: RuntimeQuestion,
  ): Promise<{ approved: boolean; why: string }> {
    const made = await this.deps.approvals.request(
      {
        id: approvalId(run.runId, 0, question.index),
        kind: 'tool',
        agentId: run.agentId,
        sessionKey: run.sessionKey,
        runId: run.runId,
        step: 0,
        index: question.index,
        toolCallId: null,
        subject: question.subject,
        args: question.args,
        details: question.details,
        reason: question.reason,
        editable: false,
        ttlMs: this.deps.config.approvals.expiresAfterSeconds * 1000,
        onExpiry: this.deps.config.approvals.onExpiry,
      },
      this.deps.clock.now(),
    );
    if (made.event) this.deps.published([made.event]);
    const answer = await awaitAnswer({ ...this.deps, store: this.deps.approvals }, made.approval, run.signal);
    const approved = answer.status === 'approved' || (answer.status === 'expired' && answer.onExpiry === 'allow');
    const by =
      answer.status === 'expired'
        ? `nobody answered approval request ${answer.id} in time (approvals.expiresAfterSeconds)`
        : `${answer.decidedBy} ${answer.status} approval request ${answer.id}`;
    return { approved, why: `${by}${answer.note ? `: ${answer.note}` : ''}` };
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
    const views: BudgetView[] = [];
    const spends = new Map((await budgets.spend(caps.map((cap) => cap.key))).map((spend) => [spend.key, spend]));
    for (const cap of caps) views.push(view(cap, spends.get(cap.key)));
    const perKey: [string, 'session' | 'subagentTree' | 'boardTask' | 'peers'][] = [
      ['session:', 'session'],
      ['tree:', 'subagentTree'],
      ['task:', 'boardTask'],
    ];
    for (const [prefix, source] of perKey) {
      const limit = config.budgets[source as 'session' | 'subagentTree' | 'boardTask'];
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
      const bad = Object.keys(rest);
      if (bad.length || [tokens, costMicros].some((value) => value !== undefined && !(Number.isInteger(value) && (value as number) > 0)))
        throw new SwitchboardError(
          'INVALID_REQUEST',
          'a raised budget is { "tokens": <positive integer>, "costMicros": <positive integer> }',
        );
      return;
    }
    const tool = (await this.deps.toolsFor(approval.agentId)).find((candidate) => candidate.name === approval.subject);
    if (!tool) throw new SwitchboardError('INVALID_REQUEST', `agent "${approval.agentId}" has no tool ${approval.subject} now`);
    if (tool.shownSchema) return;
    const parsed = parseToolArgs(tool.parameters, edited);
    if (!parsed.ok) throw new SwitchboardError('INVALID_REQUEST', `the edited arguments do not fit ${tool.name}'s schema: ${parsed.error}`);
  }
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

/** A small number from a text, for a request's place: one per cap and limit. */
function hashIndex(text: string): number {
  let hash = 0;
  for (let i = 0; i < text.length; i += 1) hash = (hash * 31 + text.charCodeAt(i)) | 0;
  return Math.abs(hash);
}
