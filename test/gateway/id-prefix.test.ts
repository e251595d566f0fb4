import { afterEach, describe, expect, it } from 'vitest';
import { startGateway } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { stopTestGateway } from '../helpers/gateway.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
});

describe('ids by prefix', () => {
  it('a unique prefix of 4 or more characters finds the id; an ambiguous one lists its matches; a short or unknown one is left as given', async () => {
    const { config } = parseConfigText(
      '{ agents: { list: [{ id: "a", model: "scripted/m" }] }, models: { providers: { scripted: { type: "scripted", models: { m: { rules: [{ reply: "ok" }] } } } } } }',
      '/t.json5',
    );
    let next = 0;
    // Every id the gateway makes starts with "abcd", so that runs share a prefix.
    const ids = { next: () => `abcd${String(++next).padStart(4, '0')}-0000-4000-8000-000000000000` };
    gateway = await startGateway({ config, store: await SqliteStore.open({ path: ':memory:' }), gatewayId: 'gw-ids', ids });
    for (const message of ['one', 'two']) await gateway.waitForInput((await gateway.send({ target: 'a', message })).input.id, 5000);
    const runs = (await gateway.listRuns({})).map((run) => run.id).sort();
    expect(runs).toHaveLength(2);
    expect(await gateway.resolveId('run', runs[1].slice(0, 8))).toBe(runs[1]);
    expect(await gateway.resolveId('run', runs[1])).toBe(runs[1]);
    const ambiguous = await gateway.resolveId('run', 'abcd').catch((error: unknown) => error);
    expect(ambiguous).toMatchObject({
      code: 'ID_AMBIGUOUS',
      message: `"abcd" is the start of 2 run ids: ${runs.join(', ')}; give more characters`,
      details: { matches: runs },
    });
    expect(await gateway.resolveId('run', 'abc')).toBe('abc');
    expect(await gateway.resolveId('run', 'ffff')).toBe('ffff');
    await expect(gateway.getRun(await gateway.resolveId('run', 'ffff'))).rejects.toThrow(
      'no run "ffff" (list them with "switchboard runs list")',
    );
  });
});
