/** `switchboard agents add|delete|bind|unbind|set-identity` and `a2a add`: edits of the config file that keep its comments. */
import { readFileSync, existsSync } from 'node:fs';
import JSON5 from 'json5';
import { parseConfigText } from '../config/load.js';
import { Json5Document, toJson5 } from '../config/edit.js';
import { SwitchboardError } from '../core/errors.js';
import { writeFileAtomic } from '../files.js';

interface RawConfig {
  agents?: { list?: { id?: string; identity?: Record<string, unknown> }[] };
  a2a?: { remoteAgents?: { id?: string; url?: string }[] };
  bindings?: { agentId?: string; match?: { channel?: string; account?: string; peer?: string } }[];
  schedules?: { id?: string }[];
}

function edit(path: string, change: (doc: Json5Document, raw: RawConfig) => void): void {
  if (!existsSync(path))
    throw new SwitchboardError('CONFIG_NOT_FOUND', `config file not found: ${path} (pass --config <file> or set SWITCHBOARD_CONFIG)`);
  const before = readFileSync(path, 'utf8');
  const doc = new Json5Document(before);
  change(doc, JSON5.parse(before) as RawConfig);
  // Validated as the gateway will, defaults and `${NAME:-default}` included; a variable that is unset here
  // (set only where the gateway runs) is not a problem of the edit. The file keeps its ${ENV} references.
  parseConfigText(doc.text, path, process.env, { unsetEnv: 'allow' });
  // Whole or not at all, so a crash never leaves the config half-written; a symlinked config stays a symlink.
  writeFileAtomic(path, doc.text);
}

function agentIndex(raw: RawConfig, id: string): number {
  const index = raw.agents?.list?.findIndex((agent) => agent.id === id) ?? -1;
  if (index < 0) {
    const known = raw.agents?.list?.map((agent) => agent.id).join(', ') ?? '';
    throw new SwitchboardError('AGENT_NOT_FOUND', `unknown agent "${id}" (configured agents: ${known})`);
  }
  return index;
}

export function addAgent(path: string, agent: { id: string; name?: string; model?: string; workspace?: string }): void {
  edit(path, (doc, raw) => {
    if (raw.agents?.list?.some((existing) => existing.id === agent.id)) {
      throw new SwitchboardError('AGENT_EXISTS', `agent "${agent.id}" already exists in ${path}`);
    }
    doc.appendToArray(['agents', 'list'], toJson5(agent));
  });
}

export function deleteAgent(path: string, id: string): void {
  edit(path, (doc, raw) => {
    const index = agentIndex(raw, id);
    // Bindings to the agent go with it, last first so indexes stay valid.
    const bindings = raw.bindings ?? [];
    for (let i = bindings.length - 1; i >= 0; i -= 1) if (bindings[i].agentId === id) doc.removeFromArray(['bindings'], i);
    doc.removeFromArray(['agents', 'list'], index);
  });
}

export function bindAgent(path: string, id: string, match: { channel: string; account?: string; peer?: string }): void {
  edit(path, (doc, raw) => {
    agentIndex(raw, id);
    const binding = toJson5({ agentId: id, match });
    if (doc.has(['bindings'])) doc.appendToArray(['bindings'], binding);
    else doc.setKey([], 'bindings', `[${binding}]`);
  });
}

/** Removes the agent's bindings (only those on `channel`, when given). Returns how many. */
export function unbindAgent(path: string, id: string, channel?: string): number {
  let removed = 0;
  edit(path, (doc, raw) => {
    agentIndex(raw, id);
    const bindings = raw.bindings ?? [];
    for (let i = bindings.length - 1; i >= 0; i -= 1) {
      if (bindings[i].agentId === id && (channel === undefined || bindings[i].match?.channel === channel)) {
        doc.removeFromArray(['bindings'], i);
        removed += 1;
      }
    }
  });
  return removed;
}

export function setIdentity(path: string, id: string, identity: { name?: string; emoji?: string; theme?: string; avatar?: string }): void {
  edit(path, (doc, raw) => {
    const index = agentIndex(raw, id);
    const merged = { ...(raw.agents?.list?.[index]?.identity ?? {}), ...identity };
    doc.setKey(['agents', 'list', index], 'identity', toJson5(merged));
  });
}

/** A remote A2A agent under a2a.remoteAgents (its id new, its URL not configured yet). */
export function addRemoteAgent(path: string, remote: { id: string; url: string }): void {
  edit(path, (doc, raw) => {
    const known = raw.a2a?.remoteAgents ?? [];
    const same = known.find((existing) => existing.id === remote.id || existing.url === remote.url);
    if (same)
      throw new SwitchboardError(
        'AGENT_EXISTS',
        `a2a.remoteAgents already has "${same.id}" at ${same.url} in ${path}; pick another --id, or edit that entry`,
      );
    const entry = toJson5(remote);
    if (doc.has(['a2a', 'remoteAgents'])) doc.appendToArray(['a2a', 'remoteAgents'], entry);
    else if (doc.has(['a2a'])) doc.setKey(['a2a'], 'remoteAgents', `[${entry}]`);
    else doc.setKey([], 'a2a', `{ remoteAgents: [${entry}] }`);
  });
}

/** A schedule under `schedules` (docs/schedules.md), its id new; checked as the gateway will check it. */
export function addSchedule(path: string, schedule: { id: string } & Record<string, unknown>): void {
  edit(path, (doc, raw) => {
    if (raw.schedules?.some((existing) => existing.id === schedule.id))
      throw new SwitchboardError(
        'INVALID_REQUEST',
        `schedule "${schedule.id}" already exists in ${path}; remove it first ("switchboard schedules remove ${schedule.id}") or pick another id`,
      );
    const entry = toJson5(schedule);
    if (doc.has(['schedules'])) doc.appendToArray(['schedules'], entry);
    else doc.setKey([], 'schedules', `[${entry}]`);
  });
}

export function removeSchedule(path: string, id: string): void {
  edit(path, (doc, raw) => {
    const index = raw.schedules?.findIndex((schedule) => schedule.id === id) ?? -1;
    if (index < 0) {
      const known = raw.schedules?.map((schedule) => schedule.id).join(', ') || 'none';
      throw new SwitchboardError('NOT_FOUND', `no schedule "${id}" in ${path} (schedules: ${known})`);
    }
    doc.removeFromArray(['schedules'], index);
  });
}
