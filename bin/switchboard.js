#!/usr/bin/env node
// Runs the compiled CLI from dist/ (npm ci builds it). In a checkout where a source file is newer than
// dist/ and tsx (a dev dependency) is installed, runs the sources through tsx, so an edit never runs
// stale code; an installed package has no tsx and always runs dist/.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const compiled = join(root, 'dist/cli/main.js');

function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

const fresh = existsSync(compiled) && (!existsSync(join(root, 'src')) || statSync(compiled).mtimeMs >= newestSource(join(root, 'src')));
const tsx = fresh ? undefined : await import('tsx/esm/api').catch(() => undefined);
if (tsx) {
  tsx.register();
  await import('../src/cli/main.ts');
} else if (existsSync(compiled)) {
  await import(compiled);
} else {
  process.stderr.write('switchboard: dist/ is missing; build it with "npm run build" (npm ci does this)\n');
  process.exit(1);
}
