/**
 * The registry (`registry/<Name>.json`) as pi-messenger keeps it: each participant's registration, written whole, and
 * read by everyone to know who is there. A registration whose process is gone counts as gone.
 *
 * Anyone may write the directory, so a participant is a name that passes the mailbox's rule (layout.ts) with a real
 * registration file (not a link, read with O_NOFOLLOW) or a real inbox folder, in a registry or inbox folder that is
 * not a link itself. Anything else is neither read nor listed, nor known as a recipient.
 */
import { lstatSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SwitchboardError } from '../core/errors.js';
import { isAlive } from '../kit/data-dir.js';
import { readMessageFile, writeWhole } from './files.js';
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
  // Through real folders only (every one below the mailbox's root), as every write of the mailbox.
  writeWhole(layout.registry, `${registration.name}.json`, `${JSON.stringify(registration, null, 2)}\n`, true, layout.root);
}

export function removeRegistration(layout: MailboxLayout, name: string, pid: number): void {
  const current = readRegistration(layout, name);
  // Only our own: a newer process that took the name keeps its registration.
  if (current?.pid === pid) rmSync(layout.registration(name), { force: true });
}

/** A registration is a few hundred bytes; past this it is not one. */
const MAX_REGISTRATION_BYTES = 1_000_000;

/** What is at `path`, without following a link: 'file', 'folder', or 'other' (a link, a fifo, a socket, nothing). */
function kindAt(path: string): 'file' | 'folder' | 'other' {
  try {
    const stat = lstatSync(path);
    return stat.isFile() ? 'file' : stat.isDirectory() ? 'folder' : 'other';
  } catch {
    return 'other';
  }
}

/** The name's registration, read only from a regular file (never through a link) in a registry folder that is a real one. */
export function readRegistration(layout: MailboxLayout, name: string): Registration | undefined {
  if (!isMailboxName(name) || kindAt(layout.registry) !== 'folder') return undefined;
  const read = readMessageFile(layout.registration(name), MAX_REGISTRATION_BYTES);
  if (read.kind !== 'text') return undefined;
  try {
    const value = JSON.parse(read.text) as Registration;
    return value && typeof value === 'object' && typeof value.name === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The mailbox names in `dir` (a real folder) whose entry `<name><suffix>` is of the `kind` asked for. */
function names(dir: string, suffix: string, kind: 'file' | 'folder'): string[] {
  if (kindAt(dir) !== 'folder') return [];
  try {
    return readdirSync(dir)
      .filter((file) => file.endsWith(suffix))
      .map((file) => file.slice(0, file.length - suffix.length))
      .filter((name) => isMailboxName(name) && kindAt(join(dir, `${name}${suffix}`)) === kind);
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
  const all = new Set([...names(layout.registry, '.json', 'file'), ...names(layout.inboxes, '', 'folder')]);
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

/** A recipient is known when it registered or has an inbox folder (each a real one); nothing else gets a message. */
export function isKnownRecipient(layout: MailboxLayout, name: string): boolean {
  if (!isMailboxName(name)) return false;
  if (kindAt(layout.registry) === 'folder' && kindAt(layout.registration(name)) === 'file') return true;
  return kindAt(layout.inboxes) === 'folder' && kindAt(layout.inbox(name)) === 'folder';
}

/** A message written whole into its recipient's inbox under `file`, as pi-messenger's readers expect it. */
export function postMessage(layout: MailboxLayout, message: MailMessage, file: string): string {
  writeWhole(layout.inbox(message.to), file, `${JSON.stringify(message, null, 2)}\n`, true, layout.root);
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
