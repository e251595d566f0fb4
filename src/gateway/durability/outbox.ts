/**
 * The outbox delivers at least once: retries with exponential backoff and jitter, then a dead-letter
 * state after `maxAttempts`. Handlers receive the row's idempotency key so receivers can dedupe.
 *
 * Deliveries run concurrently: up to `concurrencyPerKind` rows of one kind at once, and one row per
 * target at a time (in order), so a slow webhook holds back only its own target, never the replies and
 * completions of everyone else.
 */
import { SwitchboardError, errorMessage } from '../../core/errors.js';
import type { Clock, OutboxRecord, Store, TraceContext, TraceSpan, Tracing } from '../../ports/index.js';
import { SerialTask } from '../../kit/serial-task.js';
import { PermanentDeliveryError, RetryLaterError, backoffDelay } from '../../kit/retry.js';
import type { OutboxHandler } from '../../ports/gateway.js';
import { childOf, deliverySpanId, NO_TRACING, payloadSender, traceIdOf, traceScope } from '../../kit/trace-context.js';

export interface OutboxOptions {
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** Rows of one kind delivered at once (default 8). */
  concurrencyPerKind?: number;
  pollMs?: number;
  random?: () => number;
  /**
   * How long an attempt holds its row (default 5 minutes): another gateway takes the row up again only after this,
   * so a gateway that dies mid-delivery loses nothing, and one that outlives it has its late mark refused.
   */
  claimMs?: number;
  /** Who claims (the gateway's id): at start, the rows this owner's previous process held are due again at once. */
  owner?: string;
  /** Where each attempt's `deliver <kind>` span goes. */
  tracing?: Tracing;
}

/** The longest a receiver's retry-after holds a row back. */
const MAX_RETRY_AFTER_MS = 60 * 60_000;
const DEFAULT_CLAIM_MS = 300_000;

export class OutboxDispatcher {
  private readonly handlers = new Map<string, OutboxHandler>();
  private timer?: NodeJS.Timeout;
  private readonly passes: SerialTask;
  private stopped = true;
  /** Deliveries under way, by row id; the targets they deliver to; how many of each kind. */
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly busyTargets = new Set<string>();
  private readonly perKind = new Map<string, number>();

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly options: OutboxOptions,
    private readonly onSettled: (row: OutboxRecord, outcome: 'delivered' | 'retry' | 'dead', error?: string) => void = () => {},
    /** A pass that failed outside any one row (the store is unreachable); the next poll tries again. */
    private readonly onError: (error: unknown) => void = () => {},
    /** A mark the store refused because this attempt's claim was taken over (the gateway's log, at warn). */
    private readonly onFenced: (message: string, fields: Record<string, unknown>) => void = () => {},
  ) {
    this.passes = new SerialTask(() => this.pass(), onError);
  }

  private get owner(): string {
    return this.options.owner ?? 'gateway';
  }

  register(kind: string, handler: OutboxHandler): void {
    this.handlers.set(kind, handler);
  }

  handles(kind: string): boolean {
    return this.handlers.has(kind);
  }

  async start(): Promise<void> {
    // This owner's earlier process is gone: its attempts' holds end now, not claimMs later.
    await this.store.outbox.releaseClaims(this.owner, this.clock.now());
    this.stopped = false;
    this.timer = setInterval(() => this.kick(), this.options.pollMs ?? 250);
    this.kick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.passes.idle();
    await Promise.all(this.inFlight.values());
  }

  /** Deliver what is due now. Calls that arrive while a pass runs cause one more pass. */
  /** A dead row delivered again from its first attempt, or dropped for good. */
  async settleDead(id: string, action: 'retry' | 'drop'): Promise<OutboxRecord> {
    const row = action === 'retry' ? await this.store.outbox.retry(id, this.clock.now()) : await this.store.outbox.drop(id);
    if (!row) {
      const existing = await this.store.outbox.get(id);
      if (!existing)
        throw new SwitchboardError('NOT_FOUND', `no outbox row "${id}" (switchboard outbox list --status dead shows the dead ones)`);
      throw new SwitchboardError(
        'INVALID_REQUEST',
        `outbox row ${id} is ${existing.status}, not dead; only dead rows can be retried or dropped`,
      );
    }
    if (action === 'retry') this.kick();
    return row;
  }

  kick(): void {
    if (!this.stopped) void this.passes.kick();
  }

  /** Starts the due rows that have a free slot; it does not wait for them (each ends with a kick). */
  private async pass(): Promise<void> {
    const limit = this.options.concurrencyPerKind ?? 8;
    const rows = await this.store.outbox.listDue(this.clock.now(), 500);
    // A target with a row held back in this pass takes no later row either, so its rows stay in order.
    const heldBack = new Set<string>();
    for (const row of rows) {
      if (this.stopped) return;
      const target = `${row.kind}\n${row.target}`;
      if (this.inFlight.has(row.id)) continue;
      if (this.busyTargets.has(target) || heldBack.has(target) || (this.perKind.get(row.kind) ?? 0) >= limit) {
        heldBack.add(target);
        continue;
      }
      this.busyTargets.add(target);
      this.perKind.set(row.kind, (this.perKind.get(row.kind) ?? 0) + 1);
      const delivery = this.deliver(row)
        .catch((error) => this.onError(error))
        .finally(() => {
          this.inFlight.delete(row.id);
          this.busyTargets.delete(target);
          this.perKind.set(row.kind, (this.perKind.get(row.kind) ?? 1) - 1);
          this.kick();
        });
      this.inFlight.set(row.id, delivery);
    }
  }

  /**
   * One attempt under a claim of its own: another gateway (or this one's earlier pass) that claimed the row first
   * has it, and a mark made after the claim was taken over changes nothing (a delivered row stays delivered).
   */
  private async deliver(listed: OutboxRecord): Promise<void> {
    const row = await this.store.outbox.claim(listed.id, this.owner, this.clock.now(), this.options.claimMs ?? DEFAULT_CLAIM_MS);
    if (!row) return;
    const handler = this.handlers.get(row.kind);
    const { context, span } = this.deliverySpan(row);
    try {
      if (!handler) throw new Error(`no outbox handler for kind "${row.kind}"`);
      await traceScope.run(context, () => handler(row));
      span.end();
    } catch (error) {
      const message = errorMessage(error);
      span.end({ error: message });
      // A rate limit is the receiver asking for time, not a failure: it takes ten times the attempts to make a dead
      // letter, and each wait is the receiver's, up to an hour.
      const limited = error instanceof RetryLaterError;
      const dead = error instanceof PermanentDeliveryError || row.attempts + 1 >= this.options.maxAttempts * (limited ? 10 : 1);
      const backoff = backoffDelay(row.attempts, this.options, (this.options.random ?? Math.random)());
      const next = this.clock.now() + (limited ? Math.max(backoff, Math.min(error.retryAfterMs, MAX_RETRY_AFTER_MS)) : backoff);
      if (await this.store.outbox.markFailed(row.id, row.claimToken, message, next, dead))
        this.onSettled(row, dead ? 'dead' : 'retry', message);
      else this.refused(row, 'failure');
      return;
    }
    if (await this.store.outbox.markDelivered(row.id, row.claimToken, this.clock.now())) this.onSettled(row, 'delivered');
    else this.refused(row, 'delivery');
  }

  /**
   * One attempt's span, a child of the run that wrote the row: what the attempt writes (a reply, an announce, a
   * completion into another session) names it as its sender, so the receiving run joins the same trace.
   */
  private deliverySpan(row: OutboxRecord): { context: TraceContext; span: TraceSpan } {
    const sender = payloadSender(row.payload);
    const spanId = deliverySpanId(row.id, row.attempts);
    const tracing = this.options.tracing ?? NO_TRACING;
    const traceId = sender?.traceId ?? traceIdOf(row.id);
    const context = sender ? childOf(sender, spanId) : { traceId, spanId, sampled: tracing.sample(traceId) };
    if (!tracing.recording) return { context, span: tracing.start({ name: '', context }) };
    const span = tracing.start({
      name: `deliver ${row.kind}`,
      context,
      parent: sender,
      kind: 'producer',
      attributes: {
        'switchboard.outbox.id': row.id,
        'switchboard.outbox.kind': row.kind,
        'switchboard.outbox.target': row.target,
        'switchboard.outbox.attempt': row.attempts + 1,
      },
    });
    return { context, span };
  }

  /** An attempt that outlived its claim (a gateway paused or slow past claimMs): its mark changed nothing. */
  private refused(row: OutboxRecord & { claimToken: number }, mark: 'delivery' | 'failure'): void {
    this.onFenced(
      `outbox row ${row.id} (${row.kind} to ${row.target || '(none)'}): its ${mark} was not recorded: this gateway's claim on it (token ${row.claimToken}) ended after ${this.options.claimMs ?? DEFAULT_CLAIM_MS} ms and another attempt took the row over, which settles it (a receiver that saw both dedupes by idempotency key ${row.idempotencyKey})`,
      { outboxId: row.id, kind: row.kind, claimToken: row.claimToken },
    );
  }
}
