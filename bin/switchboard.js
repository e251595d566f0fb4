#!/usr/bin/env node
// Runs the compiled CLI from dist/ (npm ci builds it). In a checkout where a source file is newer than
// dist/ and tsx (a dev dependency) is installed, runs the sources through tsx, so an edit never runs
// stale code; an installed package has no tsx and always runs dist/, without looking at src/.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const compiled = join(root, 'dist/cli/main.js');

/** Whether any file under `dir` changed after `since`: stops at the first one (an edit is found at once). */
function changedSince(dir, since) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory() ? changedSince(path, since) : statSync(path).mtimeMs > since) return true;
  }
  return false;
}

const built = existsSync(compiled) ? statSync(compiled).mtimeMs : undefined;
const checkout = existsSync(join(root, 'src')) && existsSync(join(root, 'node_modules/tsx'));
const stale = built === undefined || (checkout && changedSince(join(root, 'src'), built));
const tsx = stale && checkout ? await import('tsx/esm/api').catch(() => undefined) : undefined;
if (tsx) {
  tsx.register();
  await import('../src/cli/main.ts');
} else if (built !== undefined) {
  await import(compiled);
} else {
  process.stderr.write('switchboard: dist/ is missing; build it with "npm run build" (npm ci does this)\n');
  process.exit(1);
}
