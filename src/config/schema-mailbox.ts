/**
 * The file mailbox and teams (docs/mailbox.md, docs/teams.md). Part of the config schema (schema.ts); every key and
 * its default is in docs/configuration.md.
 */
import { z } from 'zod';
import { agentId, positiveInt } from './schema-common.js';

/** pi-messenger's rule for a name: it is a file and a folder name in the shared directory. */
export const MAILBOX_NAME_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,49}$/;
const NAME_RULE = 'expected 1-50 characters [A-Za-z0-9_-], not starting with "-" (pi-messenger names)';
const mailboxName = z.string({ error: NAME_RULE }).regex(MAILBOX_NAME_PATTERN, { error: NAME_RULE });
/** A team's folder name as Claude Code makes it (lower case letters, digits and "-"), so its config and inboxes agree. */
const CLAUDE_TEAM_PATTERN = /^[a-z0-9][a-z0-9-]{0,63}$/;

/** One agent in the mailbox: its name there (default: its id), or `enabled: false` to keep it out. */
export const agentMailbox = z.strictObject({ name: mailboxName.optional(), enabled: z.boolean().default(true) });

export const mailboxSection = z
  .strictObject({
    enabled: z.boolean().default(false),
    /** The shared directory; default $PI_MESSENGER_DIR, else <gateway.dataDir>/mailbox. */
    dir: z.string().optional(),
    /** How often every inbox is scanned besides watching it (a missed fs.watch event costs at most this). */
    scanIntervalMs: positiveInt.default(1000),
    /** A file that does not parse yet and changed less than this long ago may still be being written: tried again. */
    partialGraceMs: positiveInt.default(5000),
    /** A message file past this size is rejected unread. */
    maxFileBytes: positiveInt.default(1_000_000),
    /** How often each agent's registration is written again (its activity, reservations and status). */
    registrationIntervalSeconds: positiveInt.default(15),
    /** A reservation without a TTL of its own lasts this long. */
    reservationTtlSeconds: positiveInt.default(3600),
  })
  .prefault({});

export const teamsSection = z
  .array(
    z.strictObject({
      /** Same rule as an agent id. */
      id: agentId,
      /** An agent id of this gateway. */
      lead: z.string().min(1),
      /** Agent ids of this gateway, or names of outside processes in the mailbox. */
      members: z.array(z.string().min(1)).min(1),
      /** The team's shared task list; default: the team's id. */
      board: z.string().min(1).optional(),
      /** What each member is good at: a task with labels goes to a member with one of them (a member without skills takes any). */
      skills: z.record(z.string(), z.array(z.string().min(1))).default({}),
      /** Mirror the team in Claude Code's files under this folder (usually "~/.claude") so its teammates can join; off when unset. */
      claudeDir: z.string().min(1).optional(),
      /**
       * The team's folder name in Claude Code's files; default: the team's id. Claude Code 2.1.178 and later give each
       * session one team of its own (`session-<8 characters of the session id>`): naming it here joins our agents to it.
       */
      claudeTeam: z
        .string()
        .regex(CLAUDE_TEAM_PATTERN, {
          error: 'expected 1-64 characters [a-z0-9-], not starting with "-" (a Claude Code team folder, such as "session-1a2b3c4d")',
        })
        .optional(),
    }),
  )
  .default([]);

export type MailboxConfig = z.infer<typeof mailboxSection>;
export type TeamConfig = z.infer<typeof teamsSection>[number];
