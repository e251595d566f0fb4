import { parseConfigText } from '../../src/config/load.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { startGateway, type StandardHooks } from '../../src/app.js';
import type { Store } from '../../src/ports/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

/** A gateway on an in-memory store, configured from JSON5 text. */
export async function startTestGateway(
  configText: string,
  env: NodeJS.ProcessEnv = {},
  store?: Store,
  hooks: StandardHooks = {},
): Promise<Gateway> {
  const { config } = parseConfigText(configText, '/test/switchboard.json5', env);
  return startGateway({ config, store: store ?? (await SqliteStore.open({ path: ':memory:' })), gatewayId: 'gw-test' }, hooks);
}

export async function stopTestGateway(gateway: Gateway): Promise<void> {
  await gateway.stop();
  await gateway.store.close();
}
