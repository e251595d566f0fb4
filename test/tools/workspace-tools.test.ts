/**
 * The workspace tools: paths checked after realpath (no symlink leads out), atomic writes, exact edits, listing and
 * searching that never follow a link out, and each refusal naming the path and the root.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseToolArgs } from '../../src/tools/tool-contract.js';
import type { GatewayTool, ToolContext } from '../../src/ports/tools.js';
import { editFileTool, listFilesTool, readFileTool, searchFilesTool, writeFileTool } from '../../src/tools/workspace-tools.js';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'sb-ws-')));
const workspace = join(base, 'workspace');
mkdirSync(join(workspace, 'notes'), { recursive: true });
writeFileSync(join(workspace, 'notes', 'a.md'), 'inside');
writeFileSync(join(workspace, '..secret'), 'a file whose name starts with two dots');
writeFileSync(join(base, 'outside.txt'), 'outside');
symlinkSync(join(base, 'outside.txt'), join(workspace, 'link-out'));
symlinkSync(base, join(workspace, 'dir-out'));
symlinkSync(join(workspace, 'notes', 'a.md'), join(workspace, 'link-in'));
symlinkSync(join(workspace, 'loop'), join(workspace, 'loop'));

const context = { workspace, signal: new AbortController().signal } as ToolContext;
const call = (tool: GatewayTool, args: Record<string, unknown>) => tool.execute(args, context);
const read = (path: string) => call(readFileTool, { path });
const outside = (path: string, real?: string) => ({
  status: 'error',
  error: `path "${path}" is outside the workspace ${workspace}${real ? ` (it leads to ${real})` : ''}; give a path inside it`,
});

describe('read_file', () => {
  it('reads files inside, including through a symlink that stays inside and a name starting with ".."', async () => {
    expect(await read('notes/a.md')).toEqual({ path: 'notes/a.md', content: 'inside' });
    expect(await read('link-in')).toEqual({ path: 'notes/a.md', content: 'inside' });
    expect(await read('..secret')).toEqual({ path: '..secret', content: 'a file whose name starts with two dots' });
  });

  it('refuses a symlink (to a file or a folder) that leads out of the workspace, and .. and absolute paths, naming the root', async () => {
    expect(await read('link-out')).toEqual(outside('link-out', join(base, 'outside.txt')));
    expect(await read('dir-out/outside.txt')).toEqual(outside('dir-out/outside.txt', join(base, 'outside.txt')));
    expect(await read('../outside.txt')).toEqual(outside('../outside.txt'));
    expect(await read(join(base, 'outside.txt'))).toEqual(outside(join(base, 'outside.txt')));
  });

  it('says what is wrong: missing, a folder, a loop, no path', async () => {
    expect(await read('nope.md')).toEqual({ status: 'error', error: '"nope.md" does not exist in the workspace' });
    expect(await read('notes')).toEqual({ status: 'error', error: '"notes" is not a file' });
    expect(await read('loop')).toEqual({ status: 'error', error: '"loop" is a symlink loop' });
    expect(parseToolArgs(readFileTool.parameters, { path: 42 })).toEqual({ ok: false, error: 'path must be a string' });
    expect(parseToolArgs(readFileTool.parameters, { path: '' })).toEqual({ ok: false, error: 'path is required' });
  });

  it('reads a long file in parts, saying where the next part starts', async () => {
    const lines = Array.from({ length: 20_000 }, (_, index) => `line ${index + 1}`);
    writeFileSync(join(workspace, 'long.txt'), lines.join('\n'));
    const first = (await read('long.txt')) as { content: string; lines: string; next: string };
    expect(first.content.startsWith('line 1\nline 2\n')).toBe(true);
    const last = Number(first.lines.split('-')[1].split(' ')[0]);
    expect(first.next).toBe(`read_file with startLine: ${last + 1} for the rest`);
    const second = (await call(readFileTool, { path: 'long.txt', startLine: last + 1 })) as { content: string };
    expect(second.content.startsWith(`line ${last + 1}\n`)).toBe(true);
  });
});

describe('write_file and edit_file', () => {
  it('writes atomically (no temporary file left) and creates folders; a symlink inside is written through', async () => {
    expect(await call(writeFileTool, { path: 'out/new.md', content: 'hello' })).toEqual({ status: 'ok', path: 'out/new.md', bytes: 5 });
    expect(readFileSync(join(workspace, 'out', 'new.md'), 'utf8')).toBe('hello');
    expect(readdirSync(join(workspace, 'out'))).toEqual(['new.md']);
    expect(await call(writeFileTool, { path: 'link-in', content: 'через' })).toEqual({ status: 'ok', path: 'notes/a.md', bytes: 10 });
    expect(readFileSync(join(workspace, 'notes', 'a.md'), 'utf8')).toBe('через');
    writeFileSync(join(workspace, 'notes', 'a.md'), 'inside');
  });

  it('refuses to write out of the workspace through a file link, a folder link, .., an absolute path or a dangling link', async () => {
    expect(await call(writeFileTool, { path: 'link-out', content: 'x' })).toEqual(outside('link-out', join(base, 'outside.txt')));
    expect(await call(writeFileTool, { path: 'dir-out/new.txt', content: 'x' })).toEqual(outside('dir-out/new.txt', base));
    expect(await call(writeFileTool, { path: '../new.txt', content: 'x' })).toEqual(outside('../new.txt'));
    expect(await call(writeFileTool, { path: join(base, 'x.txt'), content: 'x' })).toEqual(outside(join(base, 'x.txt')));
    symlinkSync(join(base, 'not-yet'), join(workspace, 'dangling'));
    expect(await call(writeFileTool, { path: 'dangling', content: 'x' })).toEqual({
      status: 'error',
      error: '"dangling" is a symlink whose target does not exist; refusing to write through it',
    });
    expect(readFileSync(join(base, 'outside.txt'), 'utf8')).toBe('outside');
    expect(readdirSync(base).sort()).toEqual(['outside.txt', 'workspace']);
  });

  it('edits an exact match once, and refuses an ambiguous or missing one with what to do', async () => {
    writeFileSync(join(workspace, 'e.txt'), 'a b a');
    expect(await call(editFileTool, { path: 'e.txt', old: 'a', new: 'c' })).toEqual({
      status: 'error',
      error: 'the text to replace appears 2 times in "e.txt"; include more of the surrounding text so it matches once, or pass all: true',
    });
    expect(await call(editFileTool, { path: 'e.txt', old: 'z', new: 'c' })).toEqual({
      status: 'error',
      error: 'the text to replace was not found in "e.txt"; read the file and copy the text exactly',
    });
    expect(await call(editFileTool, { path: 'e.txt', old: 'a b', new: 'x' })).toEqual({
      status: 'ok',
      path: 'e.txt',
      replaced: 1,
      bytes: 3,
    });
    expect(await call(editFileTool, { path: 'e.txt', old: 'a', new: 'y', all: true })).toMatchObject({ status: 'ok', replaced: 1 });
    expect(readFileSync(join(workspace, 'e.txt'), 'utf8')).toBe('x y');
  });
});

describe('list_files and search_files', () => {
  it('lists a folder with folders marked, links marked, and refuses a folder link out', async () => {
    const listed = (await call(listFilesTool, {})) as { entries: string[] };
    expect(listed.entries).toEqual(expect.arrayContaining(['notes/', 'link-out@', 'dir-out@', 'e.txt']));
    expect(await call(listFilesTool, { path: 'dir-out' })).toEqual(outside('dir-out', base));
    expect(await call(listFilesTool, { path: 'notes', recursive: true })).toEqual({
      path: 'notes',
      entries: ['notes/a.md'],
      truncated: false,
    });
  });

  it('searches by regular expression, never through a link out, with a cap that is said', async () => {
    writeFileSync(join(base, 'outside.txt'), 'needle outside');
    writeFileSync(join(workspace, 'notes', 'b.md'), 'needle one\nnothing\nneedle two');
    const found = (await call(searchFilesTool, { pattern: 'needle \\w+' })) as { matches: { path: string; line: number; text: string }[] };
    expect(found.matches).toEqual([
      { path: 'notes/b.md', line: 1, text: 'needle one' },
      { path: 'notes/b.md', line: 3, text: 'needle two' },
    ]);
    expect(await call(searchFilesTool, { pattern: 'needle', maxResults: 1 })).toMatchObject({ truncated: true, matches: [{ line: 1 }] });
    expect(await call(searchFilesTool, { pattern: '(' })).toEqual({
      status: 'error',
      error: 'pattern is not a valid regular expression: Invalid regular expression: /(/: Unterminated group',
    });
    writeFileSync(join(base, 'outside.txt'), 'outside');
  });
});
