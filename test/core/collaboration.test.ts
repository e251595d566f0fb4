/**
 * The collaboration map (`GET /v1/graph`): each part makes the links of the rows it keeps (the gateway its exchanges
 * and spawns, the A2A front its tasks, the board its tasks), and core gathers them into edges for a window.
 */
import { describe, expect, it } from 'vitest';
import { a2aLinks } from '../../src/a2a/map-links.js';
import { boardLinks } from '../../src/board/map-links.js';
import { type CollaborationLink, collaborationGraph } from '../../src/core/collaboration.js';
import type { A2ATaskRecord, BoardTaskRecord, RemoteTaskRecord } from '../../src/ports/index.js';

const link = (id: string, at: number, from = 'ops', to = 'dev'): CollaborationLink => ({
  kind: 'exchange',
  from,
  to,
  id,
  at,
  fromSession: null,
  toSession: null,
  status: 'done',
});

describe('collaboration map', () => {
  it('gathers the sources into edges inside the window, newest first, partial when any source was', () => {
    const graph = collaborationGraph(
      [
        { links: [link('e1', 10), link('e2', 30), link('old', 1)], partial: false },
        { links: [{ ...link('a1', 20, 'peer:p', 'ops'), kind: 'a2a' }], partial: true },
      ],
      { since: 5, until: 40 },
    );
    expect(graph).toMatchObject({ since: 5, until: 40, nodes: ['dev', 'ops', 'peer:p'], partial: true });
    expect(graph.edges.map((edge) => [edge.kind, edge.from, edge.to, edge.count, edge.lastAt, edge.links.map((l) => l.id)])).toEqual([
      ['exchange', 'ops', 'dev', 2, 30, ['e2', 'e1']],
      ['a2a', 'peer:p', 'ops', 1, 20, ['a1']],
    ]);
  });

  it("the A2A front's links: a peer's task into an agent, an agent's send to a remote", async () => {
    const served = {
      id: 't1',
      owner: 'p',
      agentId: 'ops',
      createdAt: 10,
      lastActivityAt: 11,
      sessionKey: 'agent:ops:a2a:p:c',
      state: 'completed',
    };
    const remote = { taskId: 'r1', remote: 'far', sessionKey: 'agent:dev:main', createdAt: 12, remoteState: 'TASK_STATE_COMPLETED' };
    const source = await a2aLinks(
      {
        list: async () => [served as unknown as A2ATaskRecord],
        listRemoteTasks: async () => [remote as unknown as RemoteTaskRecord],
      },
      { since: 0 },
    );
    expect(source).toEqual({
      links: [
        {
          kind: 'a2a',
          from: 'peer:p',
          to: 'ops',
          id: 't1',
          at: 10,
          fromSession: null,
          toSession: 'agent:ops:a2a:p:c',
          status: 'completed',
        },
        {
          kind: 'a2a',
          from: 'dev',
          to: 'remote:far',
          id: 'r1',
          at: 12,
          fromSession: 'agent:dev:main',
          toSession: null,
          status: 'TASK_STATE_COMPLETED',
        },
      ],
      partial: false,
    });
  });

  it("the board's links: from the creating agent, worker or user to the assignee, the claiming worker or anyone", async () => {
    const task = (id: string, creator: string, assignee: string | null, claimWorker: string | null) =>
      ({ id, creator, assignee, claimWorker, createdAt: 5, state: 'ready' }) as unknown as BoardTaskRecord;
    const source = await boardLinks(
      {
        tasks: async () => [task('b1', 'agent:ops:main', 'dev', null), task('b2', 'user', null, 'w1'), task('b3', 'cron', null, null)],
      },
      { since: 0 },
    );
    expect(source.links.map((l) => [l.id, l.from, l.to, l.fromSession])).toEqual([
      ['b1', 'ops', 'dev', 'agent:ops:main'],
      ['b2', 'user', 'worker:w1', null],
      ['b3', 'worker:cron', 'anyone', null],
    ]);
    expect(source.partial).toBe(false);
  });
});
