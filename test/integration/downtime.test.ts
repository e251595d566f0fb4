/**
 * The time a gateway was down is not counted as a run's or a sub-agent's time: SIGKILL a real gateway while a
 * sub-agent's run is going, keep it down for several seconds, start it again, and read the interrupted run's end, the
 * sub-agent's elapsed time and its completion's runtime.
 */
import { describe, expect, it } from 'vitest';
import { startGatewayProcess, stopGatewayProcess, tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const DOWN_MS = 6000;
const { configPath } = tempConfig(`{
  lanes: { leaseTtlSeconds: 2 },
  messages: { queue: { debounceMs: 0 } },
  agents: { list: [
    { id: "boss", model: "scripted/boss", subagents: { allowAgents: ["slow"] } },
    { id: "slow", model: "scripted/slow" },
  ] },
  models: { providers: { scripted: { type: "scripted", models: {
    boss: { rules: [
      { match: "^spawn", steps: [{ toolCalls: [{ tool: "sessions_spawn", args: { agentId: "slow", label: "slowpoke", task: "take your time" } }] }, { text: "spawned" }] },
      { reply: "noted" },
    ] },
    slow: { rules: [{ delayMs: 2500, reply: "done slowly" }] },
  } } } },
}`);

interface Subagent {
  subagentId: string;
  state: string;
  elapsedMs: number;
  usage: { durationMs: number } | null;
  childSessionKey: string;
}

describe('downtime', () => {
  it("is left out of an interrupted run's time, the sub-agent's elapsed time and its completion's runtime", async () => {
    let gw = await startGatewayProcess(configPath);
    const spawnedAt = Date.now();
    await gw.request('POST', '/v1/send', { target: 'boss', message: 'spawn', wait: true });
    const [child] = (await gw.request<{ subagents: Subagent[] }>('GET', '/v1/subagents')).body.subagents;
    await waitUntil('the child runs', async () => {
      const { body } = await gw.request<{ runs: { status: string }[] }>(
        'GET',
        `/v1/runs?sessionKey=${encodeURIComponent(child.childSessionKey)}`,
      );
      return body.runs.some((run) => run.status === 'running') ? true : undefined;
    });
    await stopGatewayProcess(gw, 'SIGKILL');
    const killedAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, DOWN_MS));
    gw = await startGatewayProcess(configPath);
    try {
      // A sub-agent a crash cut short is settled interrupted at recovery (and its parent told), not rerun.
      const settled = await waitUntil(
        'the child is settled',
        async () => {
          const { body } = await gw.request<Subagent>('GET', `/v1/subagents/${child.subagentId}`);
          return body.state === 'interrupted' ? body : undefined;
        },
        20_000,
      );
      const settledAt = Date.now();
      const { body } = await gw.request<{ runs: { status: string; endedAt: number }[] }>(
        'GET',
        `/v1/runs?sessionKey=${encodeURIComponent(child.childSessionKey)}`,
      );
      const [interrupted] = body.runs;
      expect(interrupted.status).toBe('interrupted');
      // It ended when its lease (2 s) last ran out, not when the gateway came back 6 s after the kill.
      expect(interrupted.endedAt).toBeLessThanOrEqual(killedAt + 2500);
      // The wall clock from the spawn to the settling holds the whole downtime; the times shown do not.
      expect(settledAt - spawnedAt).toBeGreaterThan(DOWN_MS);
      expect(settled.elapsedMs).toBeLessThanOrEqual(killedAt - spawnedAt + 2500);
      expect(settled.usage!.durationMs).toBeLessThanOrEqual(killedAt - spawnedAt + 2500);
    } finally {
      await stopGatewayProcess(gw);
    }
  }, 60_000);
});
