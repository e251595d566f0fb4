/** The data directory's files and the edited config are written whole or not at all. */
import { chmodSync, lstatSync, mkdtempSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFileAtomic, writeFileAtomic } from '../../src/files.js';
import { DataDir } from '../../src/kit/data-dir.js';

const temp = () => mkdtempSync(join(tmpdir(), 'sb-files-'));

describe('files written whole', () => {
  it('an empty token file, left by a crash between creating and writing it, is replaced by a new token', () => {
    const dir = new DataDir(temp()).ensure();
    writeFileSync(join(dir.path, 'token'), '');
    const token = dir.token();
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(readFileSync(join(dir.path, 'token'), 'utf8')).toBe(`${token}\n`);
    expect(statSync(join(dir.path, 'token')).mode & 0o777).toBe(0o600);
    expect(dir.token()).toBe(token);
  });

  it('creating a file that another process created first keeps theirs, and leaves no temporary file', () => {
    const path = join(temp(), 'gateway-id');
    expect(createFileAtomic(path, 'first\n', 0o600)).toBe(true);
    expect(createFileAtomic(path, 'second\n', 0o600)).toBe(false);
    expect(readFileSync(path, 'utf8')).toBe('first\n');
    expect(readdirSync(join(path, '..'))).toEqual(['gateway-id']);
  });

  it('replacing a file through a symlink keeps the link and the permissions, and replaces what it points to', () => {
    const dir = temp();
    const real = join(dir, 'real.json5');
    const link = join(dir, 'switchboard.json5');
    writeFileSync(real, '{ old: true }');
    chmodSync(real, 0o640);
    symlinkSync(real, link);
    writeFileAtomic(link, '{ new: true }');
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(real, 'utf8')).toBe('{ new: true }');
    expect(statSync(real).mode & 0o777).toBe(0o640);
    expect(readdirSync(dir).sort()).toEqual(['real.json5', 'switchboard.json5']);
  });
});
