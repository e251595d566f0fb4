/** The gateway's A2A front in the test process, on 127.0.0.1, and the messages tests send it. */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Role, type Message } from '@a2a-js/sdk';
import { A2AServer } from '../../src/a2a/server.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import type { A2ATaskStore, Store } from '../../src/ports/index.js';
import { startTestGateway, stopTestGateway } from './gateway.js';

export interface A2AFront {
  gateway: Gateway;
  front: A2AServer;
  url: string;
  /** Stops the listener, the front and the gateway. */
  close(): Promise<void>;
}

/**
 * A gateway configured from `configText` with its A2A front over `tasks` (the store's, or a spy on it), on `store` (a
 * new in-memory one by default), listening on `port` (any free one by default).
 */
export async function serveA2AFront(
  configText: string,
  tasks?: (store: A2ATaskStore) => A2ATaskStore,
  store?: Store,
  port = 0,
): Promise<A2AFront> {
  const gateway = await startTestGateway(configText, {}, store);
  const front = new A2AServer(gateway, tasks ? tasks(gateway.store.a2aTasks) : gateway.store.a2aTasks);
  const listener = createServer((request, response) => front.handle(request, response));
  await new Promise<void>((resolve) => listener.listen(port, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
  await front.start(url);
  return {
    gateway,
    front,
    url,
    async close() {
      listener.close();
      await front.stop();
      await stopTestGateway(gateway);
    },
  };
}

/** A user's text message with a new messageId, and no task or context yet unless `extra` gives them. */
export function userMessage(text: string, extra: Partial<Message> = {}): Message {
  return {
    messageId: randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: {}, filename: '', mediaType: 'text/plain' }],
    metadata: {},
    extensions: [],
    referenceTaskIds: [],
    ...extra,
  };
}
