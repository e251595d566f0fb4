/**
 * Who worked with whom over a time window (the console's collaboration map, `GET /v1/graph`): sessions_send
 * exchanges, sub-agent spawns, A2A tasks in and out, and board hand-offs, as edges between agents (and the peers,
 * remote agents and workers outside). Read from the rows the gateway keeps anyway.
 */
import { parseSessionKey } from '../../core/session-key.js';
import type { Store } from '../../ports/index.js';
import type { CollaborationLink, CollaborationEdge, CollaborationGraph } from '../../ports/gateway.js';

const SOURCE_LIMIT = 5000;
const LINKS_PER_EDGE = 20;

export async function collaborationGraph(store: Store, window: { since: number; until: number }): Promise<CollaborationGraph> {
  const agentOf = (key: string | null) => (key ? (parseSessionKey(key)?.agentId ?? key) : 'user');
  const [exchanges, spawns, served, remote, board] = await Promise.all([
    store.exchanges.list({ newest: true, limit: SOURCE_LIMIT }),
    store.subagents.list({ createdSince: window.since, limit: SOURCE_LIMIT }),
    store.a2aTasks.list({ limit: SOURCE_LIMIT }),
    store.a2aTasks.listRemoteTasks({ states: ['waiting', 'followed', 'returned', 'delivered'] }),
    store.board.list({ createdSince: window.since, limit: SOURCE_LIMIT }),
  ]);
  const links: CollaborationLink[] = [
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
      from: agentOf(row.parentSession),
      to: row.agentId,
      id: row.id,
      at: row.createdAt,
      fromSession: row.parentSession,
      toSession: row.sessionKey,
      status: row.state,
    })),
    ...served.map((row) => ({
      kind: 'a2a' as const,
      from: `peer:${row.owner}`,
      to: row.agentId,
      id: row.id,
      at: row.createdAt,
      fromSession: null,
      toSession: row.sessionKey,
      status: row.state,
    })),
    ...remote.map((row) => ({
      kind: 'a2a' as const,
      from: agentOf(row.sessionKey),
      to: `remote:${row.remote}`,
      id: row.taskId,
      at: row.createdAt,
      fromSession: row.sessionKey,
      toSession: null,
      status: row.remoteState,
    })),
    ...board.map((task) => ({
      kind: 'board' as const,
      from: task.creator.startsWith('agent:') ? agentOf(task.creator) : task.creator === 'user' ? 'user' : `worker:${task.creator}`,
      to: task.assignee ?? (task.claimWorker ? `worker:${task.claimWorker}` : 'anyone'),
      id: task.id,
      at: task.createdAt,
      fromSession: task.creator.startsWith('agent:') ? task.creator : null,
      toSession: null,
      status: task.state,
    })),
  ].filter((link) => link.at >= window.since && link.at <= window.until);
  const edges = new Map<string, CollaborationEdge>();
  for (const link of links.sort((a, b) => b.at - a.at)) {
    const key = `${link.kind}\u0000${link.from}\u0000${link.to}`;
    const edge = edges.get(key) ?? { kind: link.kind, from: link.from, to: link.to, count: 0, lastAt: link.at, links: [] };
    edge.count += 1;
    if (edge.links.length < LINKS_PER_EDGE) edge.links.push(link);
    edges.set(key, edge);
  }
  const nodes = new Set<string>();
  for (const edge of edges.values()) nodes.add(edge.from).add(edge.to);
  // Exchanges and A2A tasks come newest first: cut short only when the oldest read is still in the window.
  const full = (rows: readonly unknown[]) => rows.length === SOURCE_LIMIT;
  const partial =
    (full(exchanges) && exchanges.at(-1)!.createdAt >= window.since) ||
    (full(served) && served.at(-1)!.lastActivityAt >= window.since) ||
    full(spawns) ||
    full(board);
  return { ...window, nodes: [...nodes].sort(), edges: [...edges.values()], partial };
}
