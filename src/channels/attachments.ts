/**
 * Files sent with a chat message, saved in the agent's workspace under `inbox/<channel>/` and named in the input's text,
 * or refused with a reason the agent (and, for a message of files alone, the sender) is told. A file is written only
 * inside the workspace as it really is (symlinks resolved) and never over anything (O_EXCL): a redelivered message finds
 * its file there and names it again.
 */
import { lstat, mkdir, realpath, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
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
  options: { channel: string; workspace: string | undefined; maxBytes: number },
): Promise<SavedAttachments> {
  const notes: string[] = [];
  const refusals: string[] = [];
  const refuse = (name: string, why: string) => {
    notes.push(`[attachment ${name} not taken: ${why}]`);
    refusals.push(`Your file ${name} was not taken: ${why}.`);
  };
  if (message.attachments.length === 0) return { notes, refusals, taken: notes.length - refusals.length };
  if (!options.workspace) {
    for (const file of message.attachments) refuse(file.name, 'this agent has no workspace to keep files in (agents.defaults.workspace)');
    return { notes, refusals, taken: notes.length - refusals.length };
  }
  const root = await realpath(options.workspace).catch(() => undefined);
  if (!root) {
    for (const file of message.attachments) refuse(file.name, 'the agent’s workspace folder does not exist');
    return { notes, refusals, taken: notes.length - refusals.length };
  }
  const relative = join('inbox', options.channel);
  const folder = join(root, relative);
  await mkdir(folder, { recursive: true });
  const real = await realpath(folder);
  if (!isInside(root, real)) {
    for (const file of message.attachments) refuse(file.name, `${relative} leads outside the workspace`);
    return { notes, refusals, taken: notes.length - refusals.length };
  }
  for (const [index, file] of message.attachments.entries()) {
    if (file.size !== undefined && file.size > options.maxBytes) {
      refuse(file.name, `it is ${file.size} bytes, over the ${options.maxBytes} the channel takes (maxAttachmentBytes)`);
      continue;
    }
    const name = `${safeName(message.id)}-${index}-${safeName(file.name)}`;
    const path = join(real, name);
    try {
      const existing = await lstat(path).catch(() => undefined);
      if (!existing) {
        const bytes = await file.fetch();
        if (bytes.byteLength > options.maxBytes) {
          refuse(file.name, `it is ${bytes.byteLength} bytes, over the ${options.maxBytes} the channel takes (maxAttachmentBytes)`);
          continue;
        }
        await writeFile(path, bytes, { flag: 'wx' });
      } else if (!existing.isFile()) {
        refuse(file.name, `${join(relative, name)} is taken by something that is not a file`);
        continue;
      }
      notes.push(`[attachment saved: ${join(relative, name)}${file.mimeType ? ` (${file.mimeType})` : ''}]`);
    } catch (error) {
      refuse(file.name, `it could not be fetched or saved (${errorMessage(error)})`);
    }
  }
  return { notes, refusals, taken: notes.length - refusals.length };
}
