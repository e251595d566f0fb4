/**
 * The shared directory's layout, as pi-messenger lays it out (docs/mailbox.md), so that its peers and ours read
 * each other's files: `registry/<Name>.json`, `inbox/<Name>/<epoch ms>-<6 base36>.json`, and in each inbox our
 * own `.processing/` (claimed files) and `.rejected/` (refused files, each with `<file>.error` beside it).
 */
import { createHash } from 'node:crypto';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { MAILBOX_NAME_PATTERN } from '../config/schema-mailbox.js';
import type { SwitchboardConfig } from '../config/schema.js';

export { pathMatchesReservation, reservationsOverlap } from '../core/reservations.js';

export const PROCESSING = '.processing';
export const REJECTED = '.rejected';

export function isMailboxName(name: unknown): name is string {
  return typeof name === 'string' && MAILBOX_NAME_PATTERN.test(name);
}

/** `mailbox.dir`, else $PI_MESSENGER_DIR (pi-messenger's own setting), else `<dataDir>/mailbox`. */
export function mailboxDir(config: SwitchboardConfig, dataDir: string, env: NodeJS.ProcessEnv = process.env): string {
  return resolve(config.mailbox.dir ?? (env.PI_MESSENGER_DIR || join(dataDir, 'mailbox')));
}

export class MailboxLayout {
  constructor(readonly root: string) {}
  get registry(): string {
    return join(this.root, 'registry');
  }
  get inboxes(): string {
    return join(this.root, 'inbox');
  }
  registration(name: string): string {
    return join(this.registry, `${name}.json`);
  }
  inbox(name: string): string {
    return join(this.inboxes, name);
  }
  processing(name: string): string {
    return join(this.inbox(name), PROCESSING);
  }
  rejected(name: string): string {
    return join(this.inbox(name), REJECTED);
  }
}

/** A message file's name: what pi-messenger's readers sort by (oldest first) and pick up (`*.json`). */
export function messageFileName(at: number, random: string): string {
  return `${at}-${random}.json`;
}

/** Six base36 characters from a key: a delivery sent again writes the same file, not a second one. */
export function stableSuffix(key: string): string {
  return BigInt(`0x${createHash('sha256').update(key).digest('hex').slice(0, 12)}`)
    .toString(36)
    .padStart(6, '0')
    .slice(-6);
}

/** A message id from a key, in the UUID form pi-messenger's own ids have. */
export function stableMessageId(key: string): string {
  const hex = createHash('sha256').update(key).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** A message as pi-messenger writes it. Unknown keys are kept out; a missing `replyTo` reads as null. */
export const mailMessage = z.object({
  id: z.string().min(1).max(200),
  from: z.string().regex(MAILBOX_NAME_PATTERN, { error: 'expected a mailbox name (1-50 characters [A-Za-z0-9_-])' }),
  to: z.string().min(1).max(200),
  text: z.string(),
  timestamp: z.string().min(1).max(100),
  replyTo: z.string().max(200).nullable().default(null),
  /**
   * Set by a Switchboard gateway on what its agents write: the conversation and hop the message is in (the hop budget,
   * core/hops.ts), and its trace. pi-messenger ignores it; one that is not well formed is read as absent.
   */
  switchboard: z
    .object({
      conversation: z.string().min(1).max(200),
      hop: z.number().int().min(1).max(10_000),
      /** The W3C traceparent of the span that wrote it: the reader's run joins that trace (docs/observability.md). */
      traceparent: z.string().max(100).optional(),
    })
    .optional()
    .catch(undefined),
});

export type MailMessage = z.infer<typeof mailMessage>;

/** What is wrong with a parsed file, in one line; or the message. */
export function checkMessage(value: unknown, inbox: string): { ok: true; message: MailMessage } | { ok: false; error: string } {
  const parsed = mailMessage.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue.path.join('.');
    return { ok: false, error: `${path ? `${path}: ` : ''}${issue.message}` };
  }
  if (parsed.data.to !== inbox)
    return { ok: false, error: `to: the message is addressed to "${parsed.data.to}" but sits in the inbox of "${inbox}"` };
  return { ok: true, message: parsed.data };
}

export interface Reservation {
  pattern: string;
  reason?: string;
  since: string;
}
