/**
 * The configuration of gates (docs/gates.md): how long an approval request waits and what its expiry means, and the
 * budgets model calls draw on. Part of the config schema (schema.ts); every key and its default is in
 * docs/configuration.md. The `ask` lists that decide which calls need approval are in the tool policy.
 */
import { z } from 'zod';
import { positiveInt } from './schema-common.js';

export const approvalsSection = z
  .strictObject({
    /** How long a request waits for an answer. */
    expiresAfterSeconds: positiveInt.default(3600),
    /** What an unanswered request means once it expires. */
    onExpiry: z.enum(['deny', 'allow']).default('deny'),
  })
  .prefault({});

/** A cap: tokens (input and output) and cost in US dollars (from models.prices; unpriced models count tokens only). */
export const budgetLimit = z
  .strictObject({ tokens: positiveInt.optional(), cost: z.number().positive().optional() })
  .refine((limit) => limit.tokens !== undefined || limit.cost !== undefined, { error: 'give tokens, cost or both' });

export const budgetsSection = z
  .strictObject({
    /** At a cap: fail the model call with BUDGET_EXCEEDED, or suspend the run with an approval request to raise the cap. */
    onLimit: z.enum(['fail', 'ask']).default('fail'),
    /** Output tokens reserved for a model call (with its input's estimate) until it reports what it used. */
    reserveOutputTokens: positiveInt.default(4096),
    /** Per agent per UTC day, by agent id (`*`: every agent without its own). */
    agents: z.record(z.string().min(1), budgetLimit).default({}),
    /** Per session, over its life. */
    session: budgetLimit.optional(),
    /** Per sub-agent tree: a session and every sub-agent under it draw on the one cap of the session at its top. */
    subagentTree: budgetLimit.optional(),
    /** Per board task, over all its attempts. */
    boardTask: budgetLimit.optional(),
    /** Per A2A peer per UTC day, by peer name (`anonymous`: callers with no token; `*`: every peer without its own). */
    peers: z.record(z.string().min(1), budgetLimit).default({}),
  })
  .prefault({});

export type BudgetLimit = z.infer<typeof budgetLimit>;
export type BudgetsConfig = z.infer<typeof budgetsSection>;
