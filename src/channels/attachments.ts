/**
 * Files sent with a chat message, saved in the agent's workspace under `inbox/<channel>/<account>/<conversation>/` (a
 * message id is unique only in its conversation) and named in the input's text, or refused with a reason the agent
 * (and, for a message of files alone, the sender) is told. A file is written only inside the workspace as it really is
 * (symlinks resolved), whole or not at all (a temporary file linked into place), and never over anything: a
 * redelivered message finds its file there and names it again.
 */
import { randomUUID } from 'node:crypto';
import { link, lstat, mkdir, realpath, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { errorMessage } from '../core/errors.js';
import { isInside } from '../kit/paths.js';
import type { ChatMessage } from '../ports/channels.js';

export interface SavedAttachments {
  /** Lines for the input: where each file is, or why it was not taken. */
  notes: string[];
  /** The reasons files were not taken, for a sender whose message had nothing else. */
  refusals: string[];
  /** How many files were saved. */
  taken: number;
}

const safeName = (name: string) =>
  name
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .replace(/^\.+/, '_')
    .slice(0, 100) || 'file';

export async function saveAttachments(
  message: ChatMessage,
  options: { channel: string; account: string; workspace: string | undefined; maxBytes: number },
): Promise<SavedAttachments> {
  const notes: string[] = [];
  const refusals: string[] = [];
  const refuse = (name: string, why: string) => {
    notes.push(`[attachment ${name} not taken: ${why}]`);
    refusals.push(`Your file ${name} was not taken: ${why}.`);
  };
  const done = () => ({ notes, refusals, taken: notes.length - refusals.length });
  if (message.attachments.length === 0) return done();
  const folder = await inbox(message, options).catch((error: unknown) => ({
    refused: `its folder could not be made (${errorMessage(error)})`,
  }));
  if ('refused' in folder) {
    for (const file of message.attachments) refuse(file.name, folder.refused);
    return done();
  }
  for (const [index, file] of message.attachments.entries()) {
    if (file.size !== undefined && file.size > options.maxBytes) {
      refuse(file.name, `it is ${file.size} bytes, over the ${options.maxBytes} the channel takes (maxAttachmentBytes)`);
      continue;
    }
    const name = `${safeName(message.id)}-${index}-${safeName(file.name)}`;
    const path = join(folder.path, name);
    const shown = join(folder.shown, name);
    try {
      const existing = await lstat(path).catch(() => undefined);
      if (existing && !existing.isFile()) {
        refuse(file.name, `${shown} is taken by something that is not a file`);
        continue;
      }
      if (!existing) {
        const bytes = await file.fetch();
        if (bytes.byteLength > options.maxBytes) {
          refuse(file.name, `it is ${bytes.byteLength} bytes, over the ${options.maxBytes} the channel takes (maxAttachmentBytes)`);
          continue;
        }
        await placeWhole(folder.path, path, bytes);
      }
      notes.push(`[attachment saved: ${shown}${file.mimeType ? ` (${file.mimeType})` : ''}]`);
    } catch (error) {
      refuse(file.name, `it could not be fetched or saved (${errorMessage(error)})`);
    }
  }
  return done();
}

/** The message's folder, made inside the workspace, or why it cannot be. */
async function inbox(
  message: ChatMessage,
  options: { channel: string; account: string; workspace: string | undefined },
): Promise<{ path: string; shown: string } | { refused: string }> {
  if (!options.workspace) return { refused: 'this agent has no workspace to keep files in (agents.defaults.workspace)' };
  const root = await realpath(options.workspace).catch(() => undefined);
  if (!root) return { refused: 'the agent’s workspace folder does not exist' };
  const shown = join('inbox', safeName(options.channel), safeName(options.account), safeName(message.place.conversation));
  // Each step is made and resolved in turn, so that a symlink on the way is seen before anything is made through it.
  let at = root;
  for (const part of shown.split('/')) {
    const next = join(at, part);
    await mkdir(next).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
    at = await realpath(next);
    if (!isInside(root, at)) return { refused: `${relative(root, next)} leads outside the workspace` };
  }
  return { path: at, shown };
}

/**
 * Writes a file whole: a temporary file beside it, linked into place only if nothing is there yet (a link refuses an
 * existing name, atomically), then removed, whatever happened.
 */
async function placeWhole(folder: string, path: string, bytes: Uint8Array): Promise<void> {
  const temporary = join(folder, `.${randomUUID()}.part`);
  try {
    await writeFile(temporary, bytes, { flag: 'wx' });
    await link(temporary, path).catch((error: NodeJS.ErrnoException) => {
      // Another taker of the same message (Slack's message and app_mention of one post) placed it first.
      if (error.code !== 'EEXIST') throw error;
    });
  } finally {
    await rm(temporary, { force: true });
  }
}
