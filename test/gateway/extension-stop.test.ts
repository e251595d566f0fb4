import { describe, expect, it } from 'vitest';
import { ModelRegistry } from '../../src/models/model-registry.js';
import { parseConfigText } from '../../src/config/load.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

describe("the gateway's stop waits for its extensions' stops", () => {
  it('settles only after every extension has stopped, and logs one whose stop failed', async () => {
    const { config } = parseConfigText(
      `{ agents: { list: [{ id: "a", model: "scripted/m" }] },
         models: { providers: { scripted: { type: "scripted", models: { m: { rules: [{ reply: "ok" }] } } } } } }`,
      '/test/switchboard.json5',
      {},
    );
    const store = await SqliteStore.open({ path: ':memory:' });
    let release: () => void = () => {};
    const logged: string[] = [];
    const gateway = await Gateway.start({
      config,
      store,
      models: new ModelRegistry(config.models.providers),
      gatewayId: 'gw-test',
      log: (level, message) => void logged.push(`${level}: ${message}`),
      extensions: () => [
        // A pass under way (a mailbox's, a memory scan) that ends when released.
        { stop: () => new Promise<void>((resolve) => (release = resolve)) },
        {
          stop: () => {
            throw new Error('the watcher was already closed');
          },
        },
      ],
    });
    let stopped = false;
    const stopping = gateway.stop().then(() => (stopped = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(stopped).toBe(true);
    expect(logged).toContain('warn: an extension failed to stop: the watcher was already closed');
    await store.close();
  });
});
