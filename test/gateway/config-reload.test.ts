import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { applyReload, describeReload, planReload } from '../../src/config/reload.js';

const scripted = `models: { providers: { scripted: { type: "scripted", models: { a: { rules: [{ reply: "ok" }] } } } } }`;
const parse = (text: string) => parseConfigText(`{ ${scripted}, ${text} }`, '/etc/sb.json5', {}).config;

describe('config reload plan', () => {
  it('names the sections it applies and every changed key that waits for a restart, the subagent lane cap included', () => {
    const running = parse(`agents: { list: [{ id: "a", model: "scripted/a" }] }`);
    const next = parse(
      `gateway: { port: 8000 }, lanes: { main: { maxConcurrent: 2 } }, agents: { defaults: { subagents: { maxConcurrent: 3 } }, list: [{ id: "a", model: "scripted/a" }, { id: "b", model: "scripted/a" }] }`,
    );
    const plan = planReload(running, next);
    expect(plan).toEqual({
      applied: ['agents'],
      restartRequired: ['gateway.port', 'lanes.main.maxConcurrent', 'agents.defaults.subagents.maxConcurrent'],
    });
    expect(describeReload(plan)).toBe(
      'config reloaded: applied agents; restart the gateway for gateway.port, lanes.main.maxConcurrent, agents.defaults.subagents.maxConcurrent',
    );
    const sameObject = running.agents;
    applyReload(running, next, plan);
    expect(running.agents.list.map((agent) => agent.id)).toEqual(['a', 'b']);
    expect(running.agents).not.toBe(sameObject);
    expect(running.gateway.port).toBe(7317);
    expect(planReload(running, running)).toEqual({ applied: [], restartRequired: [] });
  });
});
