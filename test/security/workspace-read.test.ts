/** workspace_read: paths are checked after realpath, so no symlink leads out of the workspace. */
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { workspaceReadTool } from '../../src/tools/builtin.js';
import { parseToolArgs } from '../../src/gateway/tool-contract.js';
import type { ToolContext } from '../../src/gateway/tool-contract.js';

const base = mkdtempSync(join(tmpdir(), 'sb-ws-'));
const workspace = join(base, 'workspace');
mkdirSync(join(workspace, 'notes'), { recursive: true });
writeFileSync(join(workspace, 'notes', 'a.md'), 'inside');
writeFileSync(join(workspace, '..secret'), 'a file whose name starts with two dots');
writeFileSync(join(base, 'outside.txt'), 'outside');
symlinkSync(join(base, 'outside.txt'), join(workspace, 'link-out'));
symlinkSync(base, join(workspace, 'dir-out'));
symlinkSync(join(workspace, 'notes', 'a.md'), join(workspace, 'link-in'));
symlinkSync(join(workspace, 'loop'), join(workspace, 'loop'));

const context = { workspace } as ToolContext;
const read = (path: string) => workspaceReadTool.execute({ path }, context);

describe('workspace_read', () => {
  it('reads files inside, including through a symlink that stays inside and a name starting with ".."', async () => {
    expect(await read('notes/a.md')).toEqual({ path: 'notes/a.md', content: 'inside' });
    expect(await read('link-in')).toEqual({ path: 'link-in', content: 'inside' });
    expect(await read('..secret')).toEqual({ path: '..secret', content: 'a file whose name starts with two dots' });
  });

  it('refuses a symlink (to a file or a folder) that leads out of the workspace, and .. and absolute paths', async () => {
    expect(await read('link-out')).toEqual({ error: 'path "link-out" is outside the workspace' });
    expect(await read('dir-out/outside.txt')).toEqual({ error: 'path "dir-out/outside.txt" is outside the workspace' });
    expect(await read('../outside.txt')).toEqual({ error: 'path "../outside.txt" is outside the workspace' });
    expect(await read(join(base, 'outside.txt'))).toEqual({ error: `path "${join(base, 'outside.txt')}" is outside the workspace` });
  });

  it('says what is wrong: missing, a folder, a loop, no path', async () => {
    expect(await read('nope.md')).toEqual({ error: '"nope.md" does not exist in the workspace' });
    expect(await read('notes')).toEqual({ error: '"notes" is not a file' });
    expect(await read('loop')).toEqual({ error: '"loop" is a symlink loop' });
    expect(parseToolArgs(workspaceReadTool.parameters, { path: 42 })).toEqual({ ok: false, error: 'path must be a string' });
    expect(parseToolArgs(workspaceReadTool.parameters, { path: '' })).toEqual({ ok: false, error: 'path is required' });
  });
});
