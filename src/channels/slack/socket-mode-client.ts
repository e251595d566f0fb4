/**
 * Slack's Socket Mode client (docs/channels.md, Slack), as bolt ships it. Bolt's own SocketModeReceiver builds its
 * client without WebClient options, so it cannot be pointed at another Web API root (`apiUrl`, a test's fake): the
 * account builds the client itself. `@slack/socket-mode` is bolt's dependency, not ours, so it is loaded from bolt's
 * own folder: the version bolt was released with. Adding `@slack/socket-mode` to package.json would make this a
 * plain import.
 */
import { createRequire } from 'node:module';
import type { SocketModeReceiver, webApi } from '@slack/bolt';
import type { Logger } from '@slack/logger';

export type SocketModeClient = SocketModeReceiver['client'];

export interface SocketModeClientOptions {
  appToken: string;
  logger?: Logger;
  autoReconnectEnabled?: boolean;
  clientOptions?: Omit<webApi.WebClientOptions, 'logLevel' | 'logger'>;
}

type SocketModeClientClass = new (options: SocketModeClientOptions) => SocketModeClient;

let loaded: SocketModeClientClass | undefined;

export function createSocketModeClient(options: SocketModeClientOptions): SocketModeClient {
  if (!loaded) {
    const fromHere = createRequire(import.meta.url);
    const fromBolt = createRequire(fromHere.resolve('@slack/bolt'));
    loaded = (fromBolt('@slack/socket-mode') as { SocketModeClient: SocketModeClientClass }).SocketModeClient;
  }
  return new loaded(options);
}
