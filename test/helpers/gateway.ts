import { parseConfigText } from '../../src/config/load.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

/** A gateway on an in-memory store, configured from JSON5 text. */
export async function startTestGateway(configText: string, env: NodeJS.ProcessEnv = {}): Promise<Gateway> {
  const { config } = parseConfigText(configText, '/test/switchboard.json5', env);
  const store = await SqliteStore.open({ path: ':memory:' });
  return Gateway.start({ config, store, gatewayId: 'gw-test' });
}

export async function stopTestGateway(gateway: Gateway): Promise<void> {
  await gateway.stop();
  await gateway.store.close();
}
