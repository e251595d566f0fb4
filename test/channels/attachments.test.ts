/** Files sent with chat messages (docs/channels.md, "Files"): saved inside the workspace only, never over anything. */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { saveAttachments } from '../../src/channels/attachments.js';
import type { ChatMessage } from '../../src/ports/channels.js';

const message = (files: { name: string; bytes: string }[]): ChatMessage => ({
  id: '9',
  place: { conversation: 'c', kind: 'direct' },
  sender: { id: 'u' },
  text: 'files',
  addressed: true,
  attachments: files.map((file) => ({ name: file.name, fetch: async () => Buffer.from(file.bytes) })),
});

const temp = () => realpathSync(mkdtempSync(join(tmpdir(), 'sb-att-')));

describe('saveAttachments', () => {
  it('saves under inbox/<channel>/<account>/<conversation>/ with a safe name, and names it again when the message comes twice', async () => {
    const workspace = temp();
    const files = message([{ name: '../../etc/passwd', bytes: 'x' }]);
    const first = await saveAttachments(files, { channel: 'slack', account: 'acc', workspace, maxBytes: 100 });
    expect(first).toEqual({ notes: ['[attachment saved: inbox/slack/acc/c/9-0-__.._etc_passwd]'], refusals: [], taken: 1 });
    expect(readFileSync(join(workspace, 'inbox/slack/acc/c/9-0-__.._etc_passwd'), 'utf8')).toBe('x');
    expect(await saveAttachments(files, { channel: 'slack', account: 'acc', workspace, maxBytes: 100 })).toEqual(first);
    // Message 9 of another conversation is another file: ids are unique only in their conversation.
    const other = { ...message([{ name: '../../etc/passwd', bytes: 'y' }]), place: { conversation: 'd', kind: 'direct' as const } };
    await saveAttachments(other, { channel: 'slack', account: 'acc', workspace, maxBytes: 100 });
    expect(readFileSync(join(workspace, 'inbox/slack/acc/d/9-0-__.._etc_passwd'), 'utf8')).toBe('y');
    expect(readFileSync(join(workspace, 'inbox/slack/acc/c/9-0-__.._etc_passwd'), 'utf8')).toBe('x');
  });

  it('refuses to write through an inbox folder that is a symlink out of the workspace', async () => {
    const workspace = temp();
    const outside = temp();
    mkdirSync(join(workspace, 'inbox'));
    symlinkSync(outside, join(workspace, 'inbox/telegram'));
    const saved = await saveAttachments(message([{ name: 'a.txt', bytes: 'x' }]), {
      channel: 'telegram',
      account: 'acc',
      workspace,
      maxBytes: 100,
    });
    expect(saved).toEqual({
      notes: ['[attachment a.txt not taken: inbox/telegram leads outside the workspace]'],
      refusals: ['Your file a.txt was not taken: inbox/telegram leads outside the workspace.'],
      taken: 0,
    });
    expect(readdirSync(outside)).toEqual([]);
  });

  it('refuses every file for an agent without a workspace, and a file whose bytes turn out over the limit', async () => {
    expect(
      await saveAttachments(message([{ name: 'a.txt', bytes: 'x' }]), {
        channel: 'discord',
        account: 'acc',
        workspace: undefined,
        maxBytes: 100,
      }),
    ).toEqual({
      notes: ['[attachment a.txt not taken: this agent has no workspace to keep files in (agents.defaults.workspace)]'],
      refusals: ['Your file a.txt was not taken: this agent has no workspace to keep files in (agents.defaults.workspace).'],
      taken: 0,
    });
    const saved = await saveAttachments(message([{ name: 'b.bin', bytes: 'twelve bytes' }]), {
      channel: 'discord',
      account: 'acc',
      workspace: temp(),
      maxBytes: 4,
    });
    expect(saved.refusals).toEqual(['Your file b.bin was not taken: it is 12 bytes, over the 4 the channel takes (maxAttachmentBytes).']);
  });
});
