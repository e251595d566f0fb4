/**
 * The gateway's own hand-offs on the collaboration map (core/collaboration.ts gathers them with the fronts'):
 * sessions_send exchanges and sub-agent spawns, read from the rows the gateway keeps anyway.
 */
import { agentOfSession, type LinkSource } from '../../core/collaboration.js';
import type { Store } from '../../ports/index.js';

const SOURCE_LIMIT = 5000;

export async function gatewayLinks(
  store: Pick<Store, 'exchanges' | 'subagents'>,
  window: { since: number; until: number },
): Promise<LinkSource> {
  const [exchanges, spawns] = await Promise.all([
    store.exchanges.list({ newest: true, limit: SOURCE_LIMIT }),
    store.subagents.list({ createdSince: window.since, limit: SOURCE_LIMIT }),
  ]);
  return {
    links: [
      ...exchanges.map((row) => ({
        kind: 'exchange' as const,
        from: row.requesterAgent,
        to: row.targetAgent,
        id: row.id,
        at: row.createdAt,
        fromSession: row.requesterSession,
        toSession: row.targetSession,
        status: `${row.phase}/${row.replyState}`,
      })),
      ...spawns.map((row) => ({
        kind: 'spawn' as const,
        from: agentOfSession(row.parentSession),
        to: row.agentId,
        id: row.id,
        at: row.createdAt,
        fromSession: row.parentSession,
        toSession: row.sessionKey,
        status: row.state,
      })),
    ],
    // Exchanges come newest first: cut short only when the oldest read is still in the window.
    partial: (exchanges.length === SOURCE_LIMIT && exchanges.at(-1)!.createdAt >= window.since) || spawns.length === SOURCE_LIMIT,
  };
}
