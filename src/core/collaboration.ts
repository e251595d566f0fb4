/**
 * Who worked with whom over a time window (the console's collaboration map, `GET /v1/graph`): hand-offs between
 * agents and the parties outside, each link made by the part that keeps its rows (the gateway its exchanges and
 * spawns, the A2A front its tasks, the board its tasks), gathered here into edges.
 */
import { parseSessionKey } from './session-key.js';

export type LinkKind = 'exchange' | 'spawn' | 'a2a' | 'board';

/** One hand-off: an exchange, a spawn, an A2A task or a board task. */
export interface CollaborationLink {
  kind: LinkKind;
  from: string;
  to: string;
  /** The exchange, sub-agent, A2A task or board task id. */
  id: string;
  at: number;
  fromSession: string | null;
  toSession: string | null;
  status: string;
}

export interface CollaborationEdge {
  kind: LinkKind;
  from: string;
  to: string;
  count: number;
  lastAt: number;
  /** The newest hand-offs of the edge, newest first (at most LINKS_PER_EDGE). */
  links: CollaborationLink[];
}

export interface CollaborationGraph {
  since: number;
  until: number;
  /** Agent ids as they are; outside parties as `peer:<id>` (A2A callers), `remote:<id>`, `worker:<name>`, `user`. */
  nodes: string[];
  edges: CollaborationEdge[];
  /** True when a kind had more rows in the window than its source read. */
  partial: boolean;
}

/** What one source read for a window: its links, and whether it had more rows in the window than it read. */
export interface LinkSource {
  links: CollaborationLink[];
  partial: boolean;
}

const LINKS_PER_EDGE = 20;

/** The agent behind a session key (the key itself when it names none); `user` for no session. */
export function agentOfSession(key: string | null): string {
  return key ? (parseSessionKey(key)?.agentId ?? key) : 'user';
}

/** The links of every source inside the window, as edges between the parties, newest first. */
export function collaborationGraph(sources: readonly LinkSource[], window: { since: number; until: number }): CollaborationGraph {
  const links = sources.flatMap((source) => source.links).filter((link) => link.at >= window.since && link.at <= window.until);
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
  return { ...window, nodes: [...nodes].sort(), edges: [...edges.values()], partial: sources.some((source) => source.partial) };
}
