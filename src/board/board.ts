/**
 * The task board (docs/board.md): durable shared work that any worker may claim, whether an agent of
 * this gateway, an outside process or a remote A2A agent. Fronts (the control API, the agents' tools) go
 * through this; it checks what callers send, applies the config's defaults and who may touch what, and
 * writes through the board's store port. Every change is journalled in the store's transaction; this
 * publishes it and wakes the dispatcher.
 */
import { onwardHop, type Conversation } from '../core/hops.js';
import { randomUUID } from 'node:crypto';
import { closest } from '../config/issues.js';
import { BOARD_STATES, type BlockKind, type BoardState } from '../core/board.js';
import { boardSessionKey } from '../core/session-key.js';
import { SwitchboardError } from '../core/errors.js';
import { agentToAgentAllowed } from '../core/session-access.js';
import type {
  BoardClaim,
  BoardCommentRecord,
  BoardEventRecord,
  BoardStore,
  BoardTaskFilter,
  BoardTaskRecord,
  BoardTaskView,
} from '../ports/index.js';
import type { Clock } from '../ports/index.js';
import type { Events, Presence, Queries, Waits } from '../ports/gateway.js';

const BOARD_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const MAX_TITLE = 512;
const MAX_BODY = 64 * 1024;
const MAX_NAME = 256;
const MAX_LABELS = 20;

export interface CreateTaskRequest {
  title: string;
  body?: string;
  board?: string;
  assignee?: string | null;
  priority?: number;
  labels?: string[];
  dependsOn?: string[];
  idempotencyKey?: string;
  maxAttempts?: number;
  maxRuntimeSeconds?: number;
  triage?: boolean;
}

/** Who is asking: a person or program through the control API, or an agent's session through its tools. */
export type BoardActor =
  | { kind: 'user'; name: string }
  /** `conversation`: the one the agent's run is in (the hop budget). */
  | { kind: 'agent'; agentId: string; sessionKey: string; conversation?: Conversation };

export interface ClaimRequest {
  worker: string;
  board?: string;
  assignee?: string;
  taskId?: string;
  ttlSeconds?: number;
}

export interface ClaimAnswer {
  claim: BoardClaim;
  /** What the worker needs: the task, the results of what it depends on, comments and earlier attempts. */
  view: BoardTaskView;
}

type BoardGateway = Pick<Presence, 'config' | 'agents'> &
  Pick<Queries, 'resolveId'> &
  Pick<Events, 'publishJournal'> &
  Pick<Waits, 'inputRunId'>;

function bad(message: string): SwitchboardError {
  return new SwitchboardError('INVALID_REQUEST', message);
}

function checkName(field: string, value: string): string {
  if (value.length === 0 || value.length > MAX_NAME || /[\u0000-\u001f\u007f]/.test(value))
    throw bad(`${field}: expected 1 to ${MAX_NAME} printable characters, got "${value.slice(0, 40)}"`);
  return value;
}

function checkBody(body: string): void {
  if (body.trim().length === 0 || body.length > MAX_BODY) throw bad(`body: expected 1 to ${MAX_BODY} characters`);
}

export function parseBoardState(value: string): BoardState {
  if (!(BOARD_STATES as readonly string[]).includes(value))
    throw bad(`state: expected one of ${BOARD_STATES.join(', ')}, got "${value.slice(0, 40)}"`);
  return value as BoardState;
}

function checkBoard(board: string): string {
  if (!BOARD_NAME.test(board))
    throw bad(
      `board: expected lowercase letters, digits, "-" and "_" (at most 64, starting with a letter or digit), got "${board.slice(0, 40)}"`,
    );
  return board;
}

export class BoardService {
  /** Called after every change: the dispatcher looks for work again. */
  onChange: () => void = () => {};

  constructor(
    private readonly store: BoardStore,
    /** The gateway's door; a getter, because the board's tools exist before the gateway is built. */
    private readonly gateway: () => BoardGateway,
    private readonly clock: Clock,
  ) {}

  private get settings() {
    return this.gateway().config.board;
  }

  private actorName(actor: BoardActor): string {
    return actor.kind === 'user' ? actor.name : actor.sessionKey;
  }

  /** After a write: watchers see it, and the dispatcher looks again. */
  private async changed<T>(result: T): Promise<T> {
    await this.gateway().publishJournal();
    this.onChange();
    return result;
  }

  /** A full id, or the unique task id this prefix starts (as git does). */
  async resolve(id: string): Promise<string> {
    return this.gateway().resolveId('board_task', checkName('taskId', id));
  }

  private async load(id: string): Promise<BoardTaskRecord> {
    const task = await this.store.get(await this.resolve(id));
    if (!task) throw new SwitchboardError('BOARD_TASK_NOT_FOUND', `no board task "${id}" (list them with "switchboard board list")`);
    return task;
  }

  /**
   * An agent may touch tasks it created, is assigned, or that nobody is assigned; other agents' tasks only
   * where the agent-to-agent policy lets it talk to their agent.
   */
  private checkAccess(actor: BoardActor, task: Pick<BoardTaskRecord, 'id' | 'assignee' | 'creator'>, doing: string): void {
    if (actor.kind === 'user' || task.assignee === null || task.assignee === actor.agentId || task.creator === actor.sessionKey) return;
    const creatorAgent = task.creator.startsWith('agent:') ? task.creator.split(':')[1] : null;
    const others = [task.assignee, creatorAgent].filter((agent): agent is string => !!agent && agent !== actor.agentId);
    const denied = others.find((agent) => !agentToAgentAllowed(this.gateway().config.tools.agentToAgent, actor.agentId, agent));
    if (denied) {
      throw new SwitchboardError(
        'A2A_POLICY_DENIED',
        `cannot ${doing} board task ${task.id}: it belongs to "${denied}", and tools.agentToAgent does not let "${actor.agentId}" reach it`,
        { layer: 'agentToAgent' },
      );
    }
  }

  async create(request: CreateTaskRequest, actor: BoardActor): Promise<{ task: BoardTaskRecord; created: boolean; warning?: string }> {
    const title = request.title.trim();
    if (title.length === 0 || title.length > MAX_TITLE) throw bad(`title: expected 1 to ${MAX_TITLE} characters`);
    const body = request.body ?? '';
    if (body.length > MAX_BODY) throw bad(`body: at most ${MAX_BODY} characters, got ${body.length}`);
    const board = checkBoard(request.board ?? 'default');
    const assignee = request.assignee ? checkName('assignee', request.assignee) : null;
    const labels = request.labels ?? [];
    if (labels.length > MAX_LABELS) throw bad(`labels: at most ${MAX_LABELS}`);
    for (const label of labels) checkName('labels', label);
    if (
      actor.kind === 'agent' &&
      assignee &&
      assignee !== actor.agentId &&
      (this.gateway().agents.has(assignee) || this.isRemoteAgent(assignee))
    ) {
      if (!agentToAgentAllowed(this.gateway().config.tools.agentToAgent, actor.agentId, assignee)) {
        throw new SwitchboardError(
          'A2A_POLICY_DENIED',
          `cannot create a board task for "${assignee}": tools.agentToAgent must be enabled and its allow list must match both "${actor.agentId}" and "${assignee}"`,
          { layer: 'agentToAgent' },
        );
      }
    }
    const dependsOn = await Promise.all((request.dependsOn ?? []).map((id) => this.resolve(id)));
    const idempotencyKey =
      request.idempotencyKey === undefined
        ? null
        : `${actor.kind === 'agent' ? actor.sessionKey : 'api'}:${checkName('idempotencyKey', request.idempotencyKey)}`;
    const created = await this.store.create(
      {
        id: randomUUID(),
        board,
        title,
        body,
        assignee,
        priority: request.priority ?? 0,
        labels,
        creator: this.actorName(actor),
        idempotencyKey,
        maxAttempts: request.maxAttempts ?? this.settings.maxAttempts,
        maxRuntimeMs: request.maxRuntimeSeconds === undefined ? null : request.maxRuntimeSeconds * 1000,
        dependsOn,
        triage: request.triage ?? false,
        // The hop budget: a task an agent's run makes is one hop further in that run's conversation (core/hops.ts).
        conversation: actor.kind === 'agent' ? onwardHop(actor.conversation, () => randomUUID()) : null,
      },
      this.clock.now(),
    );
    const warning = assignee ? await this.unknownAssignee(assignee) : undefined;
    const answer = warning ? { ...created, warning } : created;
    return created.created ? this.changed(answer) : answer;
  }

  /**
   * Why a task for this assignee may wait forever: it is no agent of this gateway, no remote agent, and no worker
   * ever claimed a task under that name (a typo, say). The task is created all the same: a new outside worker
   * may be about to start.
   */
  private async unknownAssignee(assignee: string): Promise<string | undefined> {
    const gateway = this.gateway();
    if (gateway.agents.has(assignee) || this.isRemoteAgent(assignee) || (await this.store.workerSeen(assignee))) return undefined;
    const agents = [
      ...gateway.agents.list().map((agent) => agent.config.id),
      ...gateway.config.a2a.remoteAgents.map((remote) => remote.id),
    ];
    const near = closest(assignee, agents);
    return `assignee "${assignee}" is no agent of this gateway (${agents.join(', ') || 'none'}) and no worker has claimed a task under that name yet, so the task waits until one does${near ? ` (did you mean "${near}"?)` : ''}`;
  }

  private isRemoteAgent(id: string): boolean {
    return this.gateway().config.a2a.remoteAgents.some((remote) => remote.id === id);
  }

  async list(
    filter: { board?: string; states?: BoardState[]; assignee?: string; limit?: number },
    actor: BoardActor,
  ): Promise<BoardTaskRecord[]> {
    const tasks = await this.store.list(filter);
    if (actor.kind === 'user') return tasks;
    return tasks.filter((task) => {
      try {
        this.checkAccess(actor, task, 'read');
        return true;
      } catch {
        return false;
      }
    });
  }

  async view(id: string, actor: BoardActor, comments?: number): Promise<BoardTaskView> {
    const task = await this.load(id);
    this.checkAccess(actor, task, 'read');
    const view = (await this.store.view(task.id, { comments }))!;
    // An agent's attempt names the session it ran in and the run that took it (`board show`).
    const attempts = await Promise.all(
      view.attempts.map(async (attempt) => {
        if (!attempt.worker.startsWith('agent:')) return attempt;
        const runId = attempt.ref ? ((await this.gateway().inputRunId(attempt.ref)) ?? null) : null;
        return { ...attempt, session: boardSessionKey(attempt.worker.slice('agent:'.length), task.id), runId };
      }),
    );
    return { ...view, attempts };
  }

  /**
   * The board as the gateway's own parts read it (the teams and their Claude Code mirrors, a board session's tools):
   * by full id, with no access check and nothing added; undefined when there is no such task. People and agents
   * read through `view` and `list`, which check who asks.
   */
  async task(id: string): Promise<BoardTaskRecord | undefined> {
    return this.store.get(id);
  }

  /** A task with its dependencies, dependents, attempts and newest comments, as the store has it (see `task`). */
  async taskView(id: string, options?: { comments?: number }): Promise<BoardTaskView | undefined> {
    return this.store.view(id, options);
  }

  /** Every task the filter matches, highest priority first, then oldest (see `task`). */
  async tasks(filter: BoardTaskFilter): Promise<BoardTaskRecord[]> {
    return this.store.list(filter);
  }

  /** The tasks each of these (full ids) depends on; a task with none is left out. */
  async dependencies(taskIds: readonly string[]): Promise<Record<string, string[]>> {
    return this.store.dependencies(taskIds);
  }

  async move(id: string, to: BoardState, actor: BoardActor, reason?: string): Promise<BoardTaskRecord> {
    const task = await this.load(id);
    this.checkAccess(actor, task, 'move');
    return this.changed(await this.store.move(task.id, to, { actor: this.actorName(actor), reason }, this.clock.now()));
  }

  /** A reviewer's answer to a task in review: approved (done), or changes requested (ready again, with the comment). */
  /** `key`: the tool call's ledger key, so that a crashed run's retry reviews once. */
  async review(id: string, approve: boolean, actor: BoardActor, comment?: string, key?: string): Promise<BoardTaskRecord> {
    const task = await this.load(id);
    this.checkAccess(actor, task, 'review');
    if (!approve && !comment) throw bad('comment: say what to change when you request changes');
    if (comment !== undefined) checkBody(comment);
    return this.changed(await this.store.review(task.id, { approve, actor: this.actorName(actor), comment, key }, this.clock.now()));
  }

  /** `key`: the tool call's ledger key, so that a crashed run's retry comments once. */
  async comment(
    id: string,
    body: string,
    actor: BoardActor | { kind: 'worker'; name: string; token: number },
    key?: string,
  ): Promise<BoardCommentRecord> {
    checkBody(body);
    const task = await this.load(id);
    if (actor.kind === 'worker')
      return this.changed(
        await this.store.comment(task.id, { author: checkName('worker', actor.name), body, token: actor.token, key }, this.clock.now()),
      );
    this.checkAccess(actor, task, 'comment on');
    return this.changed(await this.store.comment(task.id, { author: this.actorName(actor), body, key }, this.clock.now()));
  }

  async link(id: string, dependsOn: string, actor: BoardActor): Promise<BoardTaskRecord> {
    const task = await this.load(id);
    const other = await this.load(dependsOn);
    this.checkAccess(actor, task, 'link');
    this.checkAccess(actor, other, 'read');
    return this.changed(await this.store.link(task.id, other.id, this.actorName(actor), this.clock.now()));
  }

  /** An outside worker's claim: the best ready task it may take, with what it needs to work on it; undefined when none. */
  async claim(request: ClaimRequest): Promise<ClaimAnswer | undefined> {
    const worker = checkName('worker', request.worker);
    if (worker.startsWith('agent:') || worker.startsWith('a2a:'))
      throw bad(`worker: names starting with "agent:" or "a2a:" belong to the gateway's own dispatcher; pick another name`);
    if (request.board !== undefined) checkBoard(request.board);
    const taskId = request.taskId === undefined ? undefined : await this.resolve(request.taskId);
    const ttlMs = (request.ttlSeconds ?? this.settings.claimTtlSeconds) * 1000;
    const claim = await this.store.claim({ worker, board: request.board, assignee: request.assignee, taskId, ttlMs }, this.clock.now());
    if (!claim) return undefined;
    return this.changed({ claim, view: (await this.store.view(claim.taskId, { comments: 20 }))! });
  }

  async heartbeat(id: string, token: number, ttlSeconds?: number): Promise<BoardClaim> {
    return this.store.heartbeat(await this.resolve(id), token, (ttlSeconds ?? this.settings.claimTtlSeconds) * 1000, this.clock.now());
  }

  async complete(
    id: string,
    token: number,
    result: string,
    options: { summary?: string; review?: boolean } = {},
  ): Promise<BoardTaskRecord> {
    const done = await this.store.complete(
      await this.resolve(id),
      token,
      { result, summary: options.summary, review: options.review, maxResultChars: this.settings.maxResultChars },
      this.clock.now(),
    );
    return this.changed(done);
  }

  async block(id: string, token: number, kind: BlockKind, reason: string): Promise<BoardTaskRecord> {
    if (reason.trim().length === 0) throw bad('reason: say why the task is blocked, so that whoever unblocks it knows what to do');
    return this.changed(await this.store.block(await this.resolve(id), token, { kind, reason }, this.clock.now()));
  }

  async release(id: string, token: number, reason?: string): Promise<BoardTaskRecord> {
    return this.changed(await this.store.release(await this.resolve(id), token, reason, this.clock.now()));
  }

  /** The board's events in seq order: of one task (an id or its prefix), of one board, after a seq. */
  async events(filter: { taskId?: string; board?: string; afterSeq?: number; limit?: number }): Promise<BoardEventRecord[]> {
    return this.store.events({ ...filter, taskId: filter.taskId === undefined ? undefined : await this.resolve(filter.taskId) });
  }
}
