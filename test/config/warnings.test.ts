/** A layer that allows what another makes impossible is a warning at start, naming both keys and the fix. */
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { configWarnings } from '../../src/config/warnings.js';
import { startGatewayProcess, stopGatewayProcess, tempConfig } from '../helpers/process.js';

const agents = `agents: { list: [{ id: "support", model: "scripted/a" }, { id: "expert", model: "scripted/a" }] }, models: { providers: { scripted: { type: "scripted", models: { a: { rules: [{ reply: "ok" }] } } } } }`;
const warningsOf = (tools: string) => configWarnings(parseConfigText(`{ ${agents}, tools: ${tools} }`, '/etc/sb.json5', {}).config);

const TRAP =
  'tools.agentToAgent.allow lets agents message each other (support -> expert, expert -> support), but tools.sessions.visibility is "tree", which reaches no other agent\'s sessions, so sessions_send to them is refused; set tools.sessions.visibility: "all" for the agents to talk';

describe('config warnings', () => {
  it('agent-to-agent allowed but visibility left at "tree" (or "self"); an allow list with messaging off', () => {
    expect(warningsOf(`{ agentToAgent: { enabled: true, allow: ["support", "expert"] } }`)).toEqual([TRAP]);
    expect(warningsOf(`{ agentToAgent: { enabled: true }, sessions: { visibility: "self" } }`)[0]).toContain(
      'tools.sessions.visibility is "self"',
    );
    expect(warningsOf(`{ agentToAgent: { enabled: true, allow: ["support", "expert"] }, sessions: { visibility: "all" } }`)).toEqual([]);
    expect(warningsOf(`{ agentToAgent: { enabled: true, allow: ["support"] } }`)).toEqual([]);
    expect(warningsOf(`{ agentToAgent: { allow: ["support", "expert"] }, sessions: { visibility: "all" } }`)).toEqual([
      'tools.agentToAgent.allow is set (["support","expert"]) but tools.agentToAgent.enabled is false, so no agent may message another; set tools.agentToAgent.enabled: true',
    ]);
  });

  it('the gateway logs the warning when it starts', async () => {
    const { configPath } = tempConfig(`{ ${agents}, tools: { agentToAgent: { enabled: true, allow: ["support", "expert"] } } }`);
    const gw = await startGatewayProcess(configPath);
    try {
      const lines = gw
        .stderr()
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { level: number; msg: string; config: string });
      expect(lines.filter((line) => line.msg.startsWith('tools.'))).toEqual([
        { level: 40, time: expect.any(Number), config: configPath, msg: TRAP },
      ]);
    } finally {
      await stopGatewayProcess(gw);
    }
  });
});
