/** Two gateway processes on one SQLite file: the second is refused; after kill -9 of the first, a new one starts. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startGatewayProcess, stopGatewayProcess, tempConfig } from '../helpers/process.js';

describe('one gateway per database', () => {
  it('a second gateway pointing at the same database from another data directory is refused; kill -9 leaves no stale lock', async () => {
    const shared = tempConfig('{}');
    const db = join(shared.dir, 'shared.db');
    const config = (dataDir: string) => `{
      gateway: { dataDir: "${dataDir}" },
      store: { sqlite: { path: "${db}" } },
      agents: { list: [{ id: "a", model: "scripted/a" }] },
      models: { providers: { scripted: { type: "scripted", models: { a: { rules: [{ reply: "ok" }] } } } } },
    }`;
    const one = tempConfig(config(join(shared.dir, 'one')));
    const two = tempConfig(config(join(shared.dir, 'two')));
    const first = await startGatewayProcess(one.configPath);
    await expect(startGatewayProcess(two.configPath)).rejects.toThrow(`another gateway is already using the database ${db}`);
    await stopGatewayProcess(first, 'SIGKILL');
    const second = await startGatewayProcess(two.configPath);
    expect((await second.request('GET', '/v1/status')).status).toBe(200);
    expect(await stopGatewayProcess(second)).toBe(0);
  }, 30_000);
});
