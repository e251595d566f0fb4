/** The board's hand-offs on the collaboration map (core/collaboration.ts): who created each task for whom. */
import { agentOfSession, type LinkSource } from '../core/collaboration.js';
import type { BoardService } from './board.js';

const SOURCE_LIMIT = 5000;

export async function boardLinks(board: Pick<BoardService, 'tasks'>, window: { since: number }): Promise<LinkSource> {
  const tasks = await board.tasks({ createdSince: window.since, limit: SOURCE_LIMIT });
  return {
    links: tasks.map((task) => ({
      kind: 'board' as const,
      from: task.creator.startsWith('agent:') ? agentOfSession(task.creator) : task.creator === 'user' ? 'user' : `worker:${task.creator}`,
      to: task.assignee ?? (task.claimWorker ? `worker:${task.claimWorker}` : 'anyone'),
      id: task.id,
      at: task.createdAt,
      fromSession: task.creator.startsWith('agent:') ? task.creator : null,
      toSession: null,
      status: task.state,
    })),
    partial: tasks.length === SOURCE_LIMIT,
  };
}
