/**
 * Schedules (docs/schedules.md): messages sent to an agent or a session on a cron expression or an interval. Part of
 * the config schema (schema.ts); every key and its default is in docs/configuration.md.
 */
import { Cron } from 'croner';
import { z } from 'zod';
import { parseSessionKey, type SessionKind } from '../core/session-key.js';
import { positiveInt } from './schema-common.js';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const EVERY_RULE = 'expected an interval such as "30s", "15m", "1h30m" or "1d", or a whole number of milliseconds of at least 1000';

/** An interval as the config writes it ("15m", "1h30m", or milliseconds), in milliseconds; undefined when it is not one. */
export function intervalMs(every: string | number): number | undefined {
  if (typeof every === 'number') return Number.isInteger(every) && every >= 1000 ? every : undefined;
  const parts = [...every.trim().matchAll(/(\d+)\s*(ms|s|m|h|d)/g)];
  if (parts.length === 0 || parts.map((part) => part[0]).join('') !== every.trim().replace(/\s+/g, '')) return undefined;
  const ms = parts.reduce((sum, [, count, unit]) => sum + Number(count) * UNITS[unit], 0);
  return ms >= 1000 ? ms : undefined;
}

/** Why croner refuses the expression (or its timezone), or undefined when it takes it. */
export function cronProblem(expression: string, timezone?: string): string | undefined {
  try {
    new Cron(expression, { paused: true, timezone }).nextRun();
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

function knownTimezone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/** An id is a segment of an idempotency key and a CLI argument: the rule of an agent id, with upper case letters and dots. */
const SCHEDULE_ID_RULE = 'expected 1-64 characters [A-Za-z0-9._-]';
const scheduleId = z.string({ error: SCHEDULE_ID_RULE }).regex(/^[A-Za-z0-9._-]{1,64}$/, { error: SCHEDULE_ID_RULE });

const cronExpression = z
  .string()
  .min(1)
  .superRefine((expression, context) => {
    const problem = cronProblem(expression);
    if (problem)
      context.addIssue({
        code: 'custom',
        message: `croner refuses "${expression}": ${problem} (e.g. "0 9 * * 1-5" is 09:00 on weekdays, "*/15 * * * *" every 15 minutes)`,
      });
  });
const timezone = z
  .string()
  .min(1)
  .refine(knownTimezone, {
    error: (issue) =>
      `unknown timezone ${JSON.stringify(issue.input)} (an IANA name such as "Europe/Berlin" or "America/New_York"; default UTC)`,
  });
const interval = z
  .union([z.string().min(1), z.number()])
  .refine((every) => intervalMs(every) !== undefined, { error: (issue) => `${EVERY_RULE}, got ${JSON.stringify(issue.input)}` });
/**
 * The kinds of session a message opens on first use (Intake.send, gateway-intake.ts `mayCreate`): a schedule's target
 * must be one. Sub-agent (subagent, acp, process), a2a and board sessions are created by their own flows only, and a
 * message to one that is not there is refused.
 */
const SCHEDULE_SESSION_KINDS: readonly SessionKind[] = ['main', 'direct', 'group', 'acp-client'];
const sessionKey = z
  .string()
  .min(1)
  .superRefine((key, context) => {
    const kind = parseSessionKey(key)?.kind;
    if (kind === undefined)
      context.addIssue({
        code: 'custom',
        message: `${JSON.stringify(key)} is not a session key (e.g. "agent:ops:main", "agent:ops:cli:direct:alice")`,
      });
    else if (!SCHEDULE_SESSION_KINDS.includes(kind))
      context.addIssue({
        code: 'custom',
        message: `${JSON.stringify(key)} is a session of kind "${kind}", which only its own flow creates; a schedule sends to a main, direct, group or acp-client session (e.g. "agent:ops:main", "agent:ops:cli:direct:alice")`,
      });
  });

export const schedule = z
  .strictObject({
    id: scheduleId,
    /** A cron expression (5 or 6 fields, seconds first when 6), evaluated by croner. */
    cron: cronExpression.optional(),
    /** The IANA timezone the cron expression is read in; default UTC. */
    timezone: timezone.optional(),
    /** An interval: "30s", "15m", "1h30m", "1d", or milliseconds. Slots are whole multiples of it since the Unix epoch. */
    every: interval.optional(),
    /** The agent whose main session gets the message. */
    agent: z.string().min(1).optional(),
    /** A session key (`agent:<id>:...`) that gets the message instead. */
    session: sessionKey.optional(),
    message: z.string().min(1),
    /** What becomes of slots that passed while no gateway ran: `skip` them, or `catchup` (the newest `maxCatchUp` of them). */
    missed: z.enum(['skip', 'catchup']).default('skip'),
    /** With `missed: "catchup"`, at most this many missed slots are fired, the newest ones. */
    maxCatchUp: positiveInt.max(1000).default(10),
    enabled: z.boolean().default(true),
  })
  .superRefine((entry, context) => {
    if ((entry.cron === undefined) === (entry.every === undefined))
      context.addIssue({ code: 'custom', message: 'give either cron (e.g. "0 9 * * 1-5") or every (e.g. "15m"), not both or neither' });
    if ((entry.agent === undefined) === (entry.session === undefined))
      context.addIssue({ code: 'custom', message: 'give either agent (its main session) or session (a session key), not both or neither' });
    if (entry.every !== undefined && entry.timezone !== undefined)
      context.addIssue({
        code: 'custom',
        path: ['timezone'],
        message: 'a timezone is for cron; an interval (every) is the same everywhere',
      });
  });

export const schedulesSection = z.array(schedule).default([]);

export type ScheduleConfig = z.infer<typeof schedule>;

/** Rules zod cannot see one schedule at a time: ids once each, targets among the configured agents, messages the intake takes. */
export function scheduleProblems(schedules: readonly ScheduleConfig[], agentIndex: Map<string, number>, maxMessageChars: number): string[] {
  const problems: string[] = [];
  const ids = new Map<string, number>();
  const agents = [...agentIndex.keys()].join(', ') || 'none';
  schedules.forEach((entry, index) => {
    const first = ids.get(entry.id);
    if (first !== undefined) problems.push(`schedules[${index}].id: duplicate schedule id "${entry.id}" (also schedules[${first}].id)`);
    else ids.set(entry.id, index);
    if (entry.agent !== undefined && !agentIndex.has(entry.agent))
      problems.push(`schedules[${index}].agent: unknown agent "${entry.agent}" (agents: ${agents})`);
    if (entry.message.length > maxMessageChars)
      problems.push(
        `schedules[${index}].message: ${entry.message.length} characters, over gateway.maxMessageChars (${maxMessageChars}); shorten it or raise the limit`,
      );
    const owner = entry.session === undefined ? undefined : parseSessionKey(entry.session)?.agentId;
    if (owner !== undefined && !agentIndex.has(owner))
      problems.push(`schedules[${index}].session: "${entry.session}" belongs to unknown agent "${owner}" (agents: ${agents})`);
  });
  return problems;
}
