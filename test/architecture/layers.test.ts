/** The layering check `npm test` runs (scripts/check-layers.mjs): it passes on src/ and fails, naming the files, on a cycle or a core import. */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/process.js';

const check = async (dir?: string) => {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [join(ROOT, 'scripts/check-layers.mjs'), ...(dir ? [dir] : [])]);
    return { code: 0, output: stdout };
  } catch (error) {
    const failed = error as { code: number; stderr: string };
    return { code: failed.code, output: failed.stderr };
  }
};

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'sb-layers-'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

describe('layering check', () => {
  it('src/ has no import cycle between folders, and core imports only itself', async () => {
    const result = await check();
    expect(result.code).toBe(0);
    expect(result.output).toMatch(
      /^layering check: \d+ files, \d+ folders, no cycles between folders or files, core imports only itself, only the composition root imports gateway\/, no front names the Store\n$/,
    );
  });

  it('fails on a cycle between folders and on a core import, naming a file for each', async () => {
    const dir = tree({
      'gateway/run.ts': "import { tool } from '../tools/tool.js';\nexport const run = tool;\n",
      'tools/tool.ts': "import type { Gateway } from '../gateway/run.js';\nexport const tool = 1;\n",
      'core/pure.ts': "import { createHash } from 'node:crypto';\nimport { x } from '../ports.js';\n",
      'ports.ts': 'export const x = 1;\n',
    });
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toBe(
      [
        'layering check failed (ARCHITECTURE.md section 3):',
        '  core imports outside itself: core/pure.ts imports "node:crypto"',
        '  core imports outside itself: core/pure.ts imports "../ports.js"',
        `  tools/tool.ts imports the gateway's own file "../gateway/run.js": go through the door (ports/gateway.ts)`,
        '  import cycle between gateway, tools:',
        '    gateway -> tools (gateway/run.ts)',
        '    tools -> gateway (tools/tool.ts)',
        '  import cycle between files gateway/run.ts, tools/tool.ts:',
        '    gateway/run.ts -> tools/tool.ts',
        '    tools/tool.ts -> gateway/run.ts',
        '',
      ].join('\n'),
    );
  });

  it('fails on a cycle between files of one folder, type-only imports included', async () => {
    const dir = tree({
      'gateway/gateway.ts': "import { control } from './control.js';\nexport class Gateway {}\n",
      'gateway/control.ts': "import type { Api } from './api.js';\nexport const control = 1;\n",
      'gateway/api.ts': "import type { Gateway } from './gateway.js';\nexport type Api = Gateway;\n",
      'gateway/leaf.ts': "import type { Api } from './api.js';\n",
    });
    const result = await check(dir);
    expect(result.output).toBe(
      [
        'layering check failed (ARCHITECTURE.md section 3):',
        '  import cycle between files gateway/api.ts, gateway/control.ts, gateway/gateway.ts:',
        '    gateway/api.ts -> gateway/gateway.ts',
        '    gateway/control.ts -> gateway/api.ts',
        '    gateway/gateway.ts -> gateway/control.ts',
        '',
      ].join('\n'),
    );
    expect(result.code).toBe(1);
  });

  it('fails on a cycle between a folder and its own sub-folder (an adapter and the shared code it builds on)', async () => {
    const dir = tree({
      'store/open.ts': "import { SqliteStore } from './sqlite/sqlite-store.js';\nexport const open = SqliteStore;\n",
      'store/base.ts': 'export class Base {}\n',
      'store/sqlite/sqlite-store.ts': "import { Base } from '../base.js';\nexport class SqliteStore extends Base {}\n",
    });
    const result = await check(dir);
    expect(result.output).toBe(
      [
        'layering check failed (ARCHITECTURE.md section 3):',
        '  import cycle between store, store/sqlite:',
        '    store -> store/sqlite (store/open.ts)',
        '    store/sqlite -> store (store/sqlite/sqlite-store.ts)',
        '',
      ].join('\n'),
    );
    expect(result.code).toBe(1);
  });

  it('fails on a front that imports a gateway/ file (its own sub-folders included) rather than the door; the composition root may', async () => {
    const dir = tree({
      'gateway/gateway.ts': 'export class Gateway {}\n',
      'gateway/runs/executor.ts': 'export const execute = 1;\n',
      'ports/gateway.ts': 'export interface Intake {}\n',
      'a2a/server.ts': "import type { Intake } from '../ports/gateway.js';\nimport { execute } from '../gateway/runs/executor.js';\n",
      'board/board.ts': "import type { Gateway } from '../gateway/gateway.js';\n",
      'app.ts': "import { Gateway } from './gateway/gateway.js';\n",
    });
    const result = await check(dir);
    expect(result.output).toBe(
      [
        'layering check failed (ARCHITECTURE.md section 3):',
        `  a2a/server.ts imports the gateway's own file "../gateway/runs/executor.js": go through the door (ports/gateway.ts)`,
        `  board/board.ts imports the gateway's own file "../gateway/gateway.js": go through the door (ports/gateway.ts)`,
        '',
      ].join('\n'),
    );
    expect(result.code).toBe(1);
  });

  it('fails on a front that names the whole Store; its own port, and the store, gateway and composition root, pass', async () => {
    const dir = tree({
      'ports/index.ts': 'export interface Store {}\nexport interface BoardStore {}\n',
      'memory/service.ts': "import type { Clock, Store as Everything } from '../ports/index.js';\n",
      'board/board.ts': "import type { BoardStore } from '../ports/index.js';\n",
      'gateway/gateway.ts': "import type { Store } from '../ports/index.js';\n",
      'store/open.ts': "import type { Store } from '../ports/index.js';\n",
      'app.ts': "import type { Store } from './ports/index.js';\n",
    });
    const result = await check(dir);
    expect(result.output).toBe(
      [
        'layering check failed (ARCHITECTURE.md section 3):',
        '  memory/service.ts names the whole Store: hand it the store port it uses instead (ports/*.ts)',
        '',
      ].join('\n'),
    );
    expect(result.code).toBe(1);
  });
});
