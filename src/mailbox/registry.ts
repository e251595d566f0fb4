/**
 * The registry (`registry/<Name>.json`) as pi-messenger keeps it: each participant's registration, written whole, and
 * read by everyone to know who is there. A registration whose process is gone counts as gone.
 */
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { existsSync, lstatSync } from 'node:fs';
import { SwitchboardError } from '../core/errors.js';
import { isAlive } from '../gateway/data-dir.js';
import { writeWhole } from './files.js';
import { isMailboxName, type MailboxLayout, type MailMessage, type Reservation } from './layout.js';

export interface Registration {
  name: string;
  pid: number;
  sessionId: string;
  cwd: string;
  model: string;
  startedAt: string;
  reservations?: Reservation[];
  gitBranch?: string;
  isHuman: boolean;
  session: { toolCalls: number; tokens: number; filesModified: string[] };
  activity: { lastActivityAt: string; currentActivity?: string; lastToolCall?: string };
  statusMessage?: string;
}

export interface Participant {
  name: string;
  alive: boolean;
  registration?: Registration;
  /** Files waiting in its inbox (not yet taken by its reader). */
  waiting: number;
}

/** A registration's pid, read from a file anyone may write: only a positive integer is a process (kill(0) is a group). */
function processAlive(pid: unknown): boolean {
  return typeof pid === 'number' && Number.isInteger(pid) && pid > 0 && isAlive(pid);
}

export function writeRegistration(layout: MailboxLayout, registration: Registration): void {
  writeWhole(layout.registry, `${registration.name}.json`, `${JSON.stringify(registration, null, 2)}\n`);
}

export function removeRegistration(layout: MailboxLayout, name: string, pid: number): void {
  const current = readRegistration(layout, name);
  // Only our own: a newer process that took the name keeps its registration.
  if (current?.pid === pid) rmSync(layout.registration(name), { force: true });
}

export function readRegistration(layout: MailboxLayout, name: string): Registration | undefined {
  try {
    const value = JSON.parse(readFileSync(layout.registration(name), 'utf8')) as Registration;
    return value && typeof value === 'object' && typeof value.name === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

function names(dir: string, suffix: string): string[] {
  try {
    return readdirSync(dir)
      .filter((file) => file.endsWith(suffix))
      .map((file) => file.slice(0, file.length - suffix.length))
      .filter(isMailboxName);
  } catch {
    return [];
  }
}

function waitingIn(dir: string): number {
  try {
    return readdirSync(dir).filter((file) => file.endsWith('.json') && !file.startsWith('.')).length;
  } catch {
    return 0;
  }
}

/** Everyone in the directory: registered (alive or gone), or with an inbox folder only (a script that never registers). */
export function participants(layout: MailboxLayout): Participant[] {
  const all = new Set([...names(layout.registry, '.json'), ...names(layout.inboxes, '')]);
  return [...all].sort().map((name) => {
    const registration = readRegistration(layout, name);
    return {
      name,
      alive: registration !== undefined && processAlive(registration.pid),
      ...(registration ? { registration } : {}),
      waiting: waitingIn(layout.inbox(name)),
    };
  });
}

/** A recipient is known when it registered or has an inbox folder (a real one); nothing else gets a message. */
export function isKnownRecipient(layout: MailboxLayout, name: string): boolean {
  if (!isMailboxName(name)) return false;
  if (existsSync(layout.registration(name))) return true;
  try {
    return lstatSync(layout.inbox(name)).isDirectory();
  } catch {
    return false;
  }
}

/** A message written whole into its recipient's inbox under `file`, as pi-messenger's readers expect it. */
export function postMessage(layout: MailboxLayout, message: MailMessage, file: string): string {
  writeWhole(layout.inbox(message.to), file, `${JSON.stringify(message, null, 2)}\n`);
  return `${layout.inbox(message.to)}/${file}`;
}

/** An unknown recipient is an error naming the known ones: a message never makes an inbox nobody reads. */
export function checkRecipient(layout: MailboxLayout, to: string): void {
  if (isKnownRecipient(layout, to)) return;
  const known = participants(layout).map((participant) => participant.name);
  throw new SwitchboardError(
    'MAILBOX_RECIPIENT_UNKNOWN',
    `no one named "${to}" in the mailbox ${layout.root} (known: ${known.join(', ') || 'none'}); a recipient registers or has an inbox folder`,
  );
}
