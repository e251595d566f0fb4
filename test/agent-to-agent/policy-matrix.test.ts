/**
 * The policy matrix: visibility x agentToAgent.enabled x allow patterns x sandboxed x target relation.
 * Every cell sends through a real gateway (config parsed, sessions in the store) and asserts either
 * that the message was accepted or the exact denial: layer, code and message.
 */
import { describe, expect, it } from 'vitest';
import { SwitchboardError } from '../../src/core/errors.js';
import { matchesPattern } from '../../src/core/tool-policy.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';

const VISIBILITIES = ['self', 'tree', 'agent', 'all'] as const;
const ALLOWS: string[][] = [[], ['support', 'expert'], ['SUPPORT', 'Exp*'], ['*'], ['support'], ['expert', 'sales']];
const REQUESTER = 'agent:support:main';
const TARGETS = {
  self: { key: REQUESTER, agent: 'support', spawned: true },
  spawned: { key: 'agent:support:subagent:k1', agent: 'support', spawned: true },
  sibling: { key: 'agent:support:cli:direct:bob', agent: 'support', spawned: false },
  cross: { key: 'agent:expert:main', agent: 'expert', spawned: false },
  crossSpawned: { key: 'agent:expert:subagent:k2', agent: 'expert', spawned: true },
} as const;

type Expected = { accepted: true } | { layer: 'visibility' | 'agentToAgent'; code: string; message: string };

/** What the seeds say each cell must do (seed 001 sections 3.2-4.3, ARCHITECTURE.md section 7). */
function expected(
  visibility: (typeof VISIBILITIES)[number],
  enabled: boolean,
  allow: string[],
  sandboxed: boolean,
  target: (typeof TARGETS)[keyof typeof TARGETS],
): Expected {
  const sandboxKey = 'agents.list[support].sandbox.mode "all"';
  const vis = (message: string): Expected => ({ layer: 'visibility', code: 'VISIBILITY_DENIED', message });
  const a2a = (message: string): Expected => ({ layer: 'agentToAgent', code: 'A2A_POLICY_DENIED', message });
  if (target.agent !== 'support') {
    if (sandboxed)
      return vis(
        `cannot send to session "${target.key}" of agent "expert": this session is sandboxed (${sandboxKey}) and may only reach itself and the sessions it spawned; no other setting lifts that`,
      );
    if (visibility !== 'all')
      return vis(
        `cannot send to session "${target.key}" of agent "expert": tools.sessions.visibility is "${visibility}", and reaching another agent's sessions needs "all"`,
      );
    if (!enabled) return a2a('cannot send to agent "expert": agent-to-agent messaging is disabled (set tools.agentToAgent.enabled: true)');
    const listed = (id: string) => allow.length === 0 || allow.some((pattern) => matchesPattern(id, pattern));
    for (const id of ['support', 'expert']) {
      if (!listed(id))
        return a2a(
          `cannot send to agent "expert": agent "${id}" is not in tools.agentToAgent.allow (${JSON.stringify(allow)}); requester and target must both match`,
        );
    }
    return { accepted: true };
  }
  if (target.key === REQUESTER) return { accepted: true };
  const effective = sandboxed && (visibility === 'agent' || visibility === 'all') ? 'tree' : visibility;
  if (effective === 'self')
    return vis(
      `cannot send to session "${target.key}": tools.sessions.visibility is "self", which allows only this session (use "tree", "agent" or "all")`,
    );
  if (effective === 'tree' && !target.spawned) {
    return vis(
      sandboxed
        ? `cannot send to session "${target.key}": this session is sandboxed (${sandboxKey}) and may only reach the sessions it spawned`
        : `cannot send to session "${target.key}": tools.sessions.visibility is "tree", which allows this session and the sessions it spawned (use "agent" for every session of agent "support")`,
    );
  }
  return { accepted: true };
}

describe('policy matrix: visibility x enabled x allow x sandboxed x target', () => {
  it('every cell is accepted or denied exactly as the seeds describe', async () => {
    let cells = 0;
    for (const visibility of VISIBILITIES) {
      for (const enabled of [false, true]) {
        for (const allow of ALLOWS) {
          for (const sandboxed of [false, true]) {
            const gateway = await startTestGateway(`{
              tools: { agentToAgent: { enabled: ${enabled}, allow: ${JSON.stringify(allow)} }, sessions: { visibility: "${visibility}" } },
              agents: { list: [
                { id: "support", model: "scripted/m" ${sandboxed ? ', sandbox: { mode: "all" }' : ''} },
                { id: "expert", model: "scripted/m" },
              ] },
              models: { providers: { scripted: { type: "scripted", models: { m: { rules: [{ reply: "ok" }] } } } } },
            }`);
            try {
              await gateway.store.sessions.ensure({ key: REQUESTER, agentId: 'support' }, 1);
              await gateway.store.sessions.ensure({ key: TARGETS.spawned.key, agentId: 'support', parentKey: REQUESTER, depth: 1 }, 1);
              await gateway.store.sessions.ensure({ key: TARGETS.sibling.key, agentId: 'support' }, 1);
              await gateway.store.sessions.ensure({ key: TARGETS.cross.key, agentId: 'expert' }, 1);
              await gateway.store.sessions.ensure({ key: TARGETS.crossSpawned.key, agentId: 'expert', parentKey: REQUESTER, depth: 1 }, 1);
              for (const [name, target] of Object.entries(TARGETS)) {
                const cell = `${visibility}/${enabled ? 'enabled' : 'disabled'}/${JSON.stringify(allow)}/${sandboxed ? 'sandboxed' : 'open'}/${name}`;
                const want = expected(visibility, enabled, allow, sandboxed, target);
                const got = await gateway.messaging
                  .send(
                    { sessionKey: REQUESTER, agentId: 'support' },
                    { sessionKey: target.key, message: 'hi', timeoutSeconds: 0, idempotencyKey: cell, mode: 'notify' },
                  )
                  .then(
                    () => ({ accepted: true }) as Expected,
                    (error: unknown) => {
                      if (!SwitchboardError.isInstance(error)) throw error;
                      return { layer: error.details?.layer, code: error.code, message: error.message } as Expected;
                    },
                  );
                expect({ cell, ...got }).toEqual({ cell, ...want });
                cells += 1;
              }
            } finally {
              await stopTestGateway(gateway);
            }
          }
        }
      }
    }
    expect(cells).toBe(VISIBILITIES.length * 2 * ALLOWS.length * 2 * Object.keys(TARGETS).length);
  });
});
