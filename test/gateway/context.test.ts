import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  assembleContext,
  buildPreamble,
  historyToMessages,
  PromptFileCache,
  provenanceLine,
  renderInput,
} from '../../src/gateway/runs/context.js';
import type { InputRecord } from '../../src/ports/index.js';

const input = (overrides: Partial<InputRecord>): InputRecord => ({
  id: 'i',
  seq: 1,
  sessionKey: 'agent:b:main',
  idempotencyKey: 'k',
  mode: 'followup',
  status: 'claimed',
  attempts: 1,
  text: 'hello',
  provenance: { kind: 'user' },
  runId: 'r',
  note: null,
  createdAt: 0,
  updatedAt: 0,
  ...overrides,
});

describe('context assembly', () => {
  it('context: workspace prompt files in order, identity in the preamble, user input unmarked', () => {
    const workspace = mkdtempSync(join(tmpdir(), 'sb-ws-'));
    writeFileSync(join(workspace, 'TOOLS.md'), 'tools here');
    writeFileSync(join(workspace, 'AGENTS.md'), 'agents here');
    writeFileSync(join(workspace, 'IDENTITY.md'), 'not read');
    const agent = { id: 'b', identity: { name: 'Bea', emoji: '🐝' } };
    const files = new PromptFileCache().read(workspace);
    const context = assembleContext(agent, files, [], [input({})]);
    expect(context.system).toBe(`${buildPreamble(agent)}\n\n## AGENTS.md\nagents here\n\n## TOOLS.md\ntools here`);
    expect(context.system.startsWith('You are agent "b" (Bea 🐝) in Switchboard')).toBe(true);
    expect(context.messages).toEqual([{ role: 'user', content: 'hello' }]);
    expect(context.frameworkChars).toBe(buildPreamble(agent).length);
  });

  it("context: a past turn's instructions are not repeated in the history, only which turn it was; the newest input has them", () => {
    const provenance = {
      kind: 'inter_session' as const,
      sourceAgent: 'b',
      sourceSession: 'agent:b:main',
      sourceTool: 'sessions_send',
      exchange: { id: 'x1', step: 'turn' as const, turn: 2, maxTurns: 5, role: 'target' as const },
    };
    const history = [
      {
        seq: 1,
        sessionKey: 'agent:a:main',
        role: 'user' as const,
        content: 'earlier turn',
        provenance,
        inputId: 'i1',
        runId: null,
        createdAt: 1,
      },
    ];
    const { messages } = historyToMessages(history as never);
    expect(messages[0].content).toBe('[message from session agent:b:main]\n[agent-to-agent turn 2]\nearlier turn');
    expect(renderInput('newest turn', provenance).text).toBe(
      '[message from session agent:b:main]\n[agent-to-agent turn 2 of 5: your reply goes to agent b; reply exactly REPLY_SKIP to end]\nnewest turn',
    );
  });

  it("context: a frozen entry's message is built once and shared by later reads (frozen too); an entry that is not frozen is built anew", () => {
    const provenance = { kind: 'inter_session' as const, sourceAgent: 'b', sourceSession: 'agent:b:main' };
    const entries = [
      { seq: 1, sessionKey: 'agent:a:main', role: 'user' as const, content: 'hi', provenance, inputId: 'i1', runId: null, createdAt: 1 },
      {
        seq: 2,
        sessionKey: 'agent:a:main',
        role: 'assistant' as const,
        content: [{ type: 'text', text: 'hello' }],
        provenance: null,
        inputId: null,
        runId: 'r1',
        createdAt: 2,
      },
      {
        seq: 3,
        sessionKey: 'agent:a:main',
        role: 'note' as const,
        content: 'run interrupted',
        provenance: null,
        inputId: null,
        runId: null,
        createdAt: 3,
      },
    ];
    const shared = entries.map((entry) => Object.freeze({ ...entry }));
    const first = historyToMessages(shared as never);
    const second = historyToMessages(shared as never);
    expect(second.messages).toEqual(historyToMessages(entries as never).messages);
    expect(second.frameworkChars).toBe(first.frameworkChars);
    expect(first.frameworkChars).toBe('[message from session agent:b:main]\n'.length + '[note: run interrupted]'.length);
    second.messages.forEach((message, i) => {
      expect(message).toBe(first.messages[i]);
      expect(Object.isFrozen(message)).toBe(true);
    });
    expect(first.messages[0]).toEqual({ role: 'user', content: '[message from session agent:b:main]\nhi' });
    const fresh = historyToMessages(entries as never);
    expect(fresh.messages[0]).not.toBe(historyToMessages(entries as never).messages[0]);
    expect(Object.isFrozen(fresh.messages[0])).toBe(false);
  });

  it('context: a provenance line names the sending session and not again its agent or the kind inter_session; both where the key does not say them', () => {
    expect(provenanceLine({ kind: 'inter_session', sourceAgent: 'a', sourceSession: 'agent:a:main', hop: 2 })).toBe(
      '[message from session agent:a:main, hop 2]',
    );
    // Without a session, or from a session of another agent's key, the kind and the agent are said.
    expect(provenanceLine({ kind: 'inter_session', sourceAgent: 'a' })).toBe('[message from inter_session, agent a]');
    expect(provenanceLine({ kind: 'inter_session', sourceAgent: 'ab', sourceSession: 'agent:a:main' })).toBe(
      '[message from agent ab, session agent:a:main]',
    );
    expect(provenanceLine({ kind: 'subagent_completion', sourceAgent: 'a', sourceSession: 'agent:a:subagent:s1' }, true)).toBe(
      '[message from subagent_completion, session agent:a:subagent:s1]',
    );
    // The tool is named on a request; a reply and an announce step say what they are themselves.
    const exchange = (step: 'request' | 'reply' | 'announce') => ({ id: 'x', step, role: 'target' as const });
    const sent = { kind: 'inter_session' as const, sourceSession: 'agent:a:main', sourceTool: 'sessions_send', hop: 1 };
    expect(provenanceLine({ ...sent, exchange: exchange('request') })).toBe(
      '[message from session agent:a:main, tool sessions_send, hop 1]',
    );
    expect(renderInput('the answer', { ...sent, exchange: exchange('reply') }).text).toBe(
      '[message from session agent:a:main, hop 1]\n[the reply to your sessions_send, which you did not wait for]\nthe answer',
    );
    expect(provenanceLine({ kind: 'system', sourceTool: 'sessions_send', hop: 1, exchange: exchange('announce') })).toBe(
      '[message from system, hop 1]',
    );
  });

  it('context: a message from an A2A peer names the peer; a user message has no marker', () => {
    expect(provenanceLine({ kind: 'a2a', channel: 'a2a', peer: 'partner' })).toBe('[message from a2a, peer partner]');
    expect(provenanceLine({ kind: 'a2a', channel: 'a2a', peer: 'anonymous' })).toBe('[message from a2a, peer anonymous]');
    expect(provenanceLine({ kind: 'user', channel: 'cli', peer: 'someone' })).toBeUndefined();
  });

  it('context: an input from another agent carries its provenance; a retry carries its note', () => {
    const context = assembleContext(
      { id: 'b' },
      [],
      [],
      [
        input({
          text: 'status?',
          provenance: {
            kind: 'inter_session',
            sourceAgent: 'a',
            sourceSession: 'agent:a:main',
            sourceTool: 'sessions_send',
            conversationId: 'c1',
            hop: 1,
          },
        }),
        input({ text: 'charge it', note: 'previous attempt was interrupted: gateway restarted' }),
      ],
    );
    expect(context.messages).toEqual([
      { role: 'user', content: '[message from session agent:a:main, tool sessions_send, hop 1]\nstatus?' },
      { role: 'user', content: '[note: previous attempt was interrupted: gateway restarted]\ncharge it' },
    ]);
  });
});
