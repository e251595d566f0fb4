/** The CLI's help and the README agree: every command and option is described, and every command is in the README's table. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { program } from '../../src/cli/commands.js';
import { ROOT } from '../helpers/process.js';

/** Every command that does something (no subcommands of its own), with its full path. */
function leaves(command: Command, path: string[] = []): { path: string; command: Command }[] {
  return command.commands.flatMap((sub) => {
    const full = [...path, sub.name()];
    return sub.commands.length > 0 ? leaves(sub, full) : [{ path: full.join(' '), command: sub }];
  });
}

describe('CLI help', () => {
  it('every command and option has a description, and every command shows the global options', () => {
    const missing: string[] = [];
    const walk = (command: Command, path: string[]) => {
      for (const sub of command.commands) {
        const full = [...path, sub.name()].join(' ');
        if (!sub.description()) missing.push(`command "${full}"`);
        for (const option of sub.options) if (!option.description) missing.push(`option ${option.flags} of "${full}"`);
        walk(sub, [...path, sub.name()]);
      }
    };
    walk(program, []);
    expect(missing).toEqual([]);
    const help = leaves(program)
      .find((leaf) => leaf.path === 'runs show')!
      .command.helpInformation();
    expect(help).toContain('--json');
    expect(help).toContain('--config <file>');
    expect(help).toContain('--url <url>');
  });

  it("every command is in the README's CLI table", () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const table = readme.slice(readme.indexOf('## CLI'), readme.indexOf('## Control API'));
    const absent = leaves(program)
      .map((leaf) => leaf.path)
      .filter(
        (path) =>
          !table.includes(`| \`${path}`) && !table.includes(`/ \`${path.split(' ').slice(0, -1).join(' ')} ${path.split(' ').at(-1)}`),
      );
    expect(absent).toEqual([]);
  });
});
