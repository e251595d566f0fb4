/** The A2A front's hand-offs on the collaboration map (core/collaboration.ts): tasks peers sent us, and tasks we sent. */
import { agentOfSession, type LinkSource } from '../core/collaboration.js';
import type { A2ATaskStore } from '../ports/index.js';

const SOURCE_LIMIT = 5000;

export async function a2aLinks(tasks: Pick<A2ATaskStore, 'list' | 'listRemoteTasks'>, window: { since: number }): Promise<LinkSource> {
  const [served, remote] = await Promise.all([
    tasks.list({ limit: SOURCE_LIMIT }),
    tasks.listRemoteTasks({ states: ['waiting', 'followed', 'returned', 'delivered'] }),
  ]);
  return {
    links: [
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
        from: agentOfSession(row.sessionKey),
        to: `remote:${row.remote}`,
        id: row.taskId,
        at: row.createdAt,
        fromSession: row.sessionKey,
        toSession: null,
        status: row.remoteState,
      })),
    ],
    // Served tasks come most recently active first: cut short only when the last read was still active in the window.
    partial: served.length === SOURCE_LIMIT && served.at(-1)!.lastActivityAt >= window.since,
  };
}
