/**
 * A team's board mirrored as Claude Code's task list (`tasks/<team>/<n>.json`, `.highwatermark`, and `.lock` held
 * while it is rewritten): each board task is a numbered file with its subject, description, status, owner and
 * dependencies. A Claude Code teammate's own changes are read before anything is written: setting a pending task
 * `in_progress` with itself as owner claims the board task for it, `completed` completes it, `pending` again releases
 * it. Then the board's truth is written back, so a change the board refused (a task someone else holds) is undone.
 * A pass that finds neither a new event of the team's board nor a task file changed since the last one does nothing
 * but keep the teammates' claims alive.
 *
 * The folders are real ones (no link on the way), files are read without following links, a task's number from the
 * mirror's state becomes a file name only if it is a number, and an owner only if it is a mailbox name.
 */
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { errorMessage } from '../core/errors.js';
import type { TeamConfig } from '../config/schema-mailbox.js';
import type { BoardService } from '../board/board.js';
import type { BoardTaskRecord, Clock } from '../ports/index.js';
import { writeWhole } from './files.js';
import { nameRefusal, nameTaken, readJsonFile, readTextFile, realDirUnder, withLock, writeJsonFile } from './claude-files.js';

type ClaudeStatus = 'pending' | 'in_progress' | 'completed';

interface ClaudeTask {
  id: string;
  subject: string;
  description: string;
  owner?: string;
  status: ClaudeStatus;
  blocks: string[];
  blockedBy: string[];
  activeForm?: string;
  metadata?: Record<string, unknown>;
}

/** A task file's fields that Claude Code (2.1.332) writes and the board has no say in. */
const KEPT_FIELDS = ['activeForm', 'metadata'] as const;

/** What the mirror remembers (`.switchboard.json`, beside the tasks): numbers, what it wrote last, the claims it holds for teammates. */
interface MirrorState {
  ids: Record<string, number>;
  last: Record<string, { status: ClaudeStatus; owner: string | null }>;
  claims: Record<string, { worker: string; token: number }>;
}

const BEAT_MS = 60_000;
/** Board events read at a time while catching up with the board's journal. */
const EVENT_PAGE = 500;

function statusOf(task: BoardTaskRecord): ClaudeStatus {
  if (task.state === 'running') return 'in_progress';
  if (task.state === 'done' || task.state === 'review' || task.state === 'cancelled') return 'completed';
  return 'pending';
}

export class ClaudeTasks {
  private readonly beats = new Map<string, number>();
  /** The last event of the team's board seen. */
  private cursor = 0;
  /** What the last full pass left: the board up to `seq`, each task file as written (`mark`), and the mirror's state. */
  private last?: { seq: number; files: Map<string, string>; state: MirrorState };

  constructor(
    private readonly team: TeamConfig & { claudeDir: string },
    private readonly board: BoardService,
    private readonly ours: () => string[],
    private readonly log: (message: string) => void,
    private readonly clock: Clock,
  ) {}

  get dir(): string {
    return join(this.team.claudeDir, 'tasks', this.team.claudeTeam ?? this.team.id);
  }

  private get boardName(): string {
    return this.team.board ?? this.team.id;
  }

  async sync(): Promise<void> {
    const seq = await this.boardSeq();
    const last = this.last;
    if (last && last.seq === seq && [...last.files].every(([name, mark]) => this.mark(name) === mark)) {
      // Nothing to mirror either way; a claim found lost makes a full pass write the state down.
      if (await this.keepClaims(last.state)) return;
    }
    this.last = undefined;
    realDirUnder(this.team.claudeDir, 'tasks', this.team.claudeTeam ?? this.team.id);
    const lockTarget = join(this.dir, '.lock');
    // The file Claude Code locks (its lock is `.lock.lock`, made with mkdir), created empty as it creates it.
    if (!nameTaken(lockTarget)) writeWhole(this.dir, '.lock', '');
    await withLock(lockTarget, this.clock, async () => {
      const statePath = join(this.dir, '.switchboard.json');
      const state = this.checked(readJsonFile<MirrorState>(statePath, { ids: {}, last: {}, claims: {} }));
      /** Each task file as read back, to see whether a teammate changed it again before it is written. */
      const readBack = new Map<string, string>();
      for (const [boardId, n] of Object.entries(state.ids)) await this.readBack(boardId, String(n), state, readBack);
      await this.keepClaims(state);
      let highest = Number(readTextFile(join(this.dir, '.highwatermark'))?.trim() ?? 0) || 0;
      const tasks = await this.board.tasks({ board: this.boardName, limit: 1000 });
      for (const task of tasks) state.ids[task.id] ??= ++highest;
      let skipped = false;
      const numberOf = (id: string) => (state.ids[id] === undefined ? undefined : String(state.ids[id]));
      for (const task of tasks) {
        const n = String(state.ids[task.id]);
        const view = await this.board.taskView(task.id, { comments: 0 });
        const owner = task.state === 'running' && task.claimWorker ? task.claimWorker.replace(/^agent:/, '') : undefined;
        const note =
          task.state === 'blocked' ? `\n\n[blocked: ${task.blockReason ?? ''}]` : task.state === 'cancelled' ? '\n\n[cancelled]' : '';
        const mirrored: ClaudeTask = {
          id: n,
          subject: task.title,
          description: `${task.body}${note}`,
          ...(owner ? { owner } : {}),
          status: statusOf(task),
          blocks: (view?.dependents ?? []).flatMap((dependent) => numberOf(dependent.id) ?? []),
          blockedBy: (view?.dependsOn ?? []).flatMap((dependency) => numberOf(dependency.id) ?? []),
        };
        const path = join(this.dir, `${n}.json`);
        // Claude Code (2.1.332) updates one task under `<n>.json.lock`, not the list's lock: the file is written under
        // it too, and not over a change a teammate made since it was read back (that change is read at the next pass).
        const written = await withLock(path, this.clock, () => {
          const current = readJsonFile<Partial<ClaudeTask> | null>(path, null);
          const now = JSON.stringify(current);
          if (readBack.has(n) && readBack.get(n) !== now) return false;
          // What only Claude Code writes (the spinner's `activeForm`, `metadata`) is kept; the rest is the board's.
          const kept = Object.fromEntries(
            KEPT_FIELDS.flatMap((field) => (current?.[field] === undefined ? [] : [[field, current[field]]])),
          );
          const next = { ...mirrored, ...kept };
          if (now !== JSON.stringify(next)) writeJsonFile(path, next);
          return true;
        });
        if (written) state.last[n] = { status: mirrored.status, owner: owner ?? null };
        else skipped = true;
      }
      writeJsonFile(statePath, state);
      writeJsonFile(join(this.dir, '.highwatermark'), highest);
      const files = ['.highwatermark', ...Object.values(state.ids).map((n) => `${n}.json`)];
      // A task left for the next pass makes that pass a full one.
      if (!skipped) this.last = { seq, files: new Map(files.map((name) => [name, this.mark(name)])), state };
    });
  }

  /**
   * The mirror's state as read from its file, which anyone who writes the folder could have changed: a task whose
   * number is not a positive integer (`../x` would be a path) is forgotten, and numbered anew at this pass.
   */
  private checked(state: Partial<MirrorState> | null): MirrorState {
    const object = (value: unknown) => (value && typeof value === 'object' && !Array.isArray(value) ? value : {});
    const ids: Record<string, number> = {};
    for (const [boardId, n] of Object.entries(object(state?.ids) as Record<string, unknown>))
      if (typeof n === 'number' && Number.isSafeInteger(n) && n > 0) ids[boardId] = n;
      else this.log(`team ${this.team.id}: task list: ${JSON.stringify(n)} is not a task number; board task ${boardId} is numbered anew`);
    return {
      ids,
      last: object(state?.last) as MirrorState['last'],
      claims: object(state?.claims) as MirrorState['claims'],
    };
  }

  /** The newest event of the team's board, read on from the last one seen. */
  private async boardSeq(): Promise<number> {
    for (;;) {
      const events = await this.board.events({ board: this.boardName, afterSeq: this.cursor, limit: EVENT_PAGE });
      if (events.length > 0) this.cursor = events.at(-1)!.seq;
      if (events.length < EVENT_PAGE) return this.cursor;
    }
  }

  /** A task file's identity and last change (a rewrite in place or a rename over it changes it), or that it is gone. */
  private mark(name: string): string {
    try {
      const stat = lstatSync(join(this.dir, name), { bigint: true });
      return `${stat.ino}:${stat.size}:${stat.mtimeNs}`;
    } catch {
      return 'missing';
    }
  }

  /** A teammate's change to a task file since the mirror last wrote it, done on the board as that teammate. */
  private async readBack(boardId: string, n: string, state: MirrorState, seen: Map<string, string>): Promise<void> {
    const before = state.last[n];
    let file: Partial<ClaudeTask> | null;
    try {
      file = readJsonFile<Partial<ClaudeTask> | null>(join(this.dir, `${n}.json`), null);
    } catch {
      return;
    }
    seen.set(n, JSON.stringify(file));
    if (!before || !file || (file.status === before.status && (file.owner ?? null) === before.owner)) return;
    const claim = state.claims[n];
    const refusal = typeof file.owner === 'string' && file.owner ? nameRefusal(file.owner) : undefined;
    // A refused owner claims nothing (it would be a worker's name, and a path in the team's inboxes): the board's
    // truth is written over the change.
    if (refusal) this.log(`team ${this.team.id}: task ${n} as changed in Claude Code's task list is not taken: its owner ${refusal}`);
    const owner = typeof file.owner === 'string' && file.owner && !refusal && !this.ours().includes(file.owner) ? file.owner : undefined;
    try {
      if (file.status === 'in_progress' && before.status === 'pending' && owner) await this.claimFor(boardId, n, owner, state);
      else if (file.status === 'completed' && before.status !== 'completed') {
        if (!claim && owner) await this.claimFor(boardId, n, owner, state);
        const held = state.claims[n];
        if (held) {
          await this.board.complete(boardId, held.token, `completed by ${held.worker} in Claude Code's task list`);
          delete state.claims[n];
        }
      } else if (file.status === 'pending' && claim) {
        await this.board.release(boardId, claim.token, `released by ${claim.worker} in Claude Code's task list`);
        delete state.claims[n];
      }
    } catch (error) {
      // Refused (someone else holds it, the claim was taken back): the board's truth is written over the change.
      this.log(`team ${this.team.id}: task ${n} as changed in Claude Code's task list: ${errorMessage(error)}`);
      if (state.claims[n] && (await this.board.task(boardId))?.token !== state.claims[n].token) delete state.claims[n];
    }
  }

  private async claimFor(boardId: string, n: string, worker: string, state: MirrorState): Promise<void> {
    const answer = await this.board.claim({ worker, taskId: boardId, board: this.boardName });
    if (answer) {
      state.claims[n] = { worker, token: answer.claim.token };
      this.beats.set(n, this.clock.now());
    }
  }

  /**
   * Claims held for teammates are kept alive while their task files say in_progress; a claim taken back is forgotten.
   * False when one was.
   */
  private async keepClaims(state: MirrorState): Promise<boolean> {
    let kept = true;
    for (const [n, claim] of Object.entries(state.claims)) {
      const boardId = Object.entries(state.ids).find(([, number]) => String(number) === n)?.[0];
      if (!boardId) continue;
      if (this.clock.now() - (this.beats.get(n) ?? 0) < BEAT_MS) continue;
      try {
        await this.board.heartbeat(boardId, claim.token);
        this.beats.set(n, this.clock.now());
      } catch {
        delete state.claims[n];
        kept = false;
      }
    }
    return kept;
  }
}
