/**
 * Session keys are addresses in OpenClaw's namespace:
 *   agent:<agentId>:main
 *   agent:<agentId>:<channel>:direct:<peerId>
 *   agent:<agentId>:<channel>:group:<groupId>
 *   agent:<agentId>:subagent:<uuid>[:subagent:<uuid>...]
 *   agent:<agentId>:a2a:<peer>:<contextId>
 *   agent:<agentId>[:subagent:<uuid>...]:acp:<uuid>       a sub-agent run by an external ACP agent
 *   agent:<agentId>[:subagent:<uuid>...]:process:<uuid>   a sub-agent run by a CLI child process
 *   agent:<agentId>:acp-client:<uuid>                      a session an editor opened with `switchboard acp`
 */
export const AGENT_ID_PATTERN = /^[a-z0-9_-]{1,64}$/;

export type SessionKind = 'main' | 'direct' | 'group' | 'subagent' | 'a2a' | 'board' | 'acp' | 'process' | 'acp-client';

/** Sub-agents run by an external runtime (docs/runtimes.md): the last segment pair of their key. */
export const RUNTIME_KINDS = ['acp', 'process'] as const;
export type RuntimeKind = (typeof RUNTIME_KINDS)[number];

export interface ParsedSessionKey {
  agentId: string;
  kind: SessionKind;
  channel?: string;
  peer?: string;
  /** Number of `subagent:` (and a last `acp:` or `process:`) segment pairs; 0 for everything else. */
  depth: number;
}

export function mainSessionKey(agentId: string): string {
  return `agent:${agentId}:main`;
}

export function directSessionKey(agentId: string, channel: string, peerId: string): string {
  return `agent:${agentId}:${channel}:direct:${peerId}`;
}

export function groupSessionKey(agentId: string, channel: string, groupId: string): string {
  return `agent:${agentId}:${channel}:group:${groupId}`;
}

/** A text as one segment of a session key: characters outside [A-Za-z0-9._-] %-encoded (no `:` can split it). */
export const segmentOf = (text: string) =>
  text.replace(/[^A-Za-z0-9._-]/g, (char) => `%${char.charCodeAt(0).toString(16).padStart(2, '0')}`);

/**
 * The session of an A2A context, scoped by the peer that opened it: two peers sending the same context
 * id never share a session. Characters outside [A-Za-z0-9._-] are %-encoded so each part is one segment.
 */
export function a2aSessionKey(agentId: string, peer: string, contextId: string): string {
  return `agent:${agentId}:a2a:${segmentOf(peer)}:${segmentOf(contextId)}`;
}

/** The session an agent works a board task in (docs/board.md): one per task, whatever the attempt. */
export function boardSessionKey(agentId: string, taskId: string): string {
  return `agent:${agentId}:board:${segmentOf(taskId)}`;
}

/** Whether sessions of this kind belong to a sub-agent record (spawned by sessions_spawn). */
export function isSpawnedKind(kind: SessionKind | undefined): boolean {
  return kind === 'subagent' || kind === 'acp' || kind === 'process';
}

export function parseSessionKey(key: string): ParsedSessionKey | undefined {
  const parts = key.split(':');
  if (parts.length < 3 || parts[0] !== 'agent' || !AGENT_ID_PATTERN.test(parts[1])) return undefined;
  const agentId = parts[1];
  const rest = parts.slice(2);
  if (rest.length === 1 && rest[0] === 'main') return { agentId, kind: 'main', depth: 0 };
  // `acp` and `process` may also be channels (`agent:<id>:acp:direct:<peer>`, three segments).
  const runtimeChild = rest.length % 2 === 0 && (RUNTIME_KINDS as readonly string[]).includes(rest[0]);
  if (rest[0] === 'subagent' || runtimeChild) {
    if (rest.length % 2 !== 0) return undefined;
    const last = rest[rest.length - 2];
    if (last !== 'subagent' && !(RUNTIME_KINDS as readonly string[]).includes(last)) return undefined;
    for (let i = 0; i < rest.length; i += 2) {
      const allowed = i === rest.length - 2 ? last : 'subagent';
      if (rest[i] !== allowed || rest[i + 1] === '') return undefined;
    }
    return { agentId, kind: last as 'subagent' | RuntimeKind, depth: rest.length / 2 };
  }
  if (rest[0] === 'acp-client' && rest.length === 2 && rest[1] !== '') return { agentId, kind: 'acp-client', depth: 0 };
  if (rest[0] === 'board' && rest.length === 2 && rest[1] !== '') return { agentId, kind: 'board', depth: 0 };
  if (rest[0] === 'a2a' && rest.length === 3 && rest[1] !== '' && rest[2] !== '') return { agentId, kind: 'a2a', peer: rest[1], depth: 0 };
  if (rest.length === 3 && (rest[1] === 'direct' || rest[1] === 'group') && rest[0] !== '' && rest[2] !== '') {
    return { agentId, kind: rest[1], channel: rest[0], peer: rest[2], depth: 0 };
  }
  return undefined;
}
