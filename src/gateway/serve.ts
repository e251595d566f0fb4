/** Starts a whole gateway process: config, data directory, store, gateway, control API. */
import pino from 'pino';
import { loadConfigFile } from '../config/load.js';
import { A2AServer } from '../a2a/server.js';
import { ControlApi } from '../http/control-api.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { DataDir } from './data-dir.js';
import { Gateway } from './gateway.js';

export interface RunningGateway {
  gateway: Gateway;
  url: string;
  token: string;
  dataDir: DataDir;
  /** Milliseconds from the call to ready (store open, recovery done, API listening). */
  readyMs: number;
  stop(): Promise<void>;
}

export interface ServeOptions {
  configPath: string;
  /** Overrides gateway.port (0 picks a free port). */
  port?: number;
  logLevel?: string;
}

export async function serveGateway(options: ServeOptions): Promise<RunningGateway> {
  const started = performance.now();
  const { config, dataDir: dataPath, path: configPath } = loadConfigFile(options.configPath);
  const logger = pino({ level: options.logLevel ?? process.env.SWITCHBOARD_LOG_LEVEL ?? 'info', base: undefined }, pino.destination(2));
  // The AI SDK's warnings (unsupported settings and the like) go to the gateway's log, not the console.
  (globalThis as { AI_SDK_LOG_WARNINGS?: unknown }).AI_SDK_LOG_WARNINGS = (options: { warnings: unknown[]; provider: string; model: string }) =>
    logger.warn({ provider: options.provider, model: options.model, warnings: options.warnings }, 'model provider warning');
  const dataDir = new DataDir(dataPath).ensure();
  const unlock = dataDir.lock();
  let store: SqliteStore;
  try {
    store = await SqliteStore.open({ path: config.store.sqlite.path ?? dataDir.databasePath, synchronous: config.store.sqlite.synchronous, exclusive: true });
  } catch (error) {
    unlock();
    throw error;
  }
  const gatewayId = dataDir.gatewayId();
  const gateway = await Gateway.start({
    config,
    store,
    gatewayId,
    capabilitySecret: dataDir.capabilitySecret(),
    dataDir: dataDir.path,
    log: (level, message, fields) => logger[level](fields ?? {}, message),
  });
  const token = dataDir.token();
  const front = config.a2a.server.enabled ? new A2AServer(gateway, undefined, (error) => logger.error({ error: String(error) }, 'a2a')) : undefined;
  const api = new ControlApi(gateway, { host: config.gateway.host, port: options.port ?? config.gateway.port, token, front });
  let url: string;
  try {
    url = await api.listen();
  } catch (error) {
    await gateway.stop();
    await store.close();
    unlock();
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      throw new Error(`port ${options.port ?? config.gateway.port} on ${config.gateway.host} is already in use (is another gateway running? set gateway.port or pass --port)`);
    }
    throw error;
  }
  gateway.setA2ACallbackBase(config.a2a.client.callbackUrl ?? config.a2a.server.publicUrl ?? url);
  dataDir.writeRuntime({ url, configPath, pid: process.pid, gatewayId, startedAt: Date.now() });
  let stopping: Promise<void> | undefined;
  return {
    gateway,
    url,
    token,
    dataDir,
    readyMs: performance.now() - started,
    stop() {
      stopping ??= (async () => {
        // The gateway first: it ends pending waits, so the API's open requests can finish and it can close.
        await gateway.stop();
        await api.close();
        await store.close();
        unlock();
      })();
      return stopping;
    },
  };
}
