/**
 * Sub-agents (ARCHITECTURE.md section 6, seeds 000, 002 and 003): one mechanism for Pi and Claude
 * subagents, Hermes delegate_task, OpenClaw sessions_spawn and Codex spawn_agent / wait_agent.
 *
 * A spawn stores the child session, its sub-agent record and its task in one transaction and returns a
 * signed handle at once (subagent-spawn.ts). The child runs in the subagent lane. The run that ends it settles the
 * record and writes the completion event to the outbox in its own commit; what happens after (delivery into the
 * parent, kills, recovery, archiving) is in subagent-lifecycle.ts. Finding, viewing and waiting are in
 * subagent-queries.ts; steer, follow-up and interrupt (Codex's followup_task and interrupt_agent; docs/subagents.md
 * maps Codex's tools) in subagent-control.ts. The assembly builds the four and hands them to Subagents.
 */
import type { SubagentControl } from './subagent-control.js';
import type { SubagentLifecycle } from './subagent-lifecycle.js';
import type { SubagentQueries } from './subagent-queries.js';
import type { SubagentSpawner } from './subagent-spawn.js';

export type { Spawner, SubagentDeps } from './subagent-types.js';
export type { SpawnRequest, SpawnResult, SubagentView, WaitOutcome } from '../../ports/gateway.js';
export { spawnerLimits } from './subagent-types.js';

export interface SubagentParts {
  spawner: SubagentSpawner;
  queries: SubagentQueries;
  control: SubagentControl;
  lifecycle: SubagentLifecycle;
}

/** The one handle the sub-agent tools, the gateway's queries and the watchdog hold: it passes each call to the part whose job it is. */
export class Subagents {
  readonly spawner: SubagentSpawner;
  readonly queries: SubagentQueries;
  readonly control: SubagentControl;
  readonly lifecycle: SubagentLifecycle;

  constructor(parts: SubagentParts) {
    this.spawner = parts.spawner;
    this.queries = parts.queries;
    this.control = parts.control;
    this.lifecycle = parts.lifecycle;
  }

  spawn(...args: Parameters<SubagentSpawner['spawn']>) {
    return this.spawner.spawn(...args);
  }
  handleOf(...args: Parameters<SubagentSpawner['handleOf']>) {
    return this.spawner.handleOf(...args);
  }

  list(...args: Parameters<SubagentQueries['list']>) {
    return this.queries.list(...args);
  }
  find(...args: Parameters<SubagentQueries['find']>) {
    return this.queries.find(...args);
  }
  view(...args: Parameters<SubagentQueries['view']>) {
    return this.queries.view(...args);
  }
  result(...args: Parameters<SubagentQueries['result']>) {
    return this.queries.result(...args);
  }
  wait(...args: Parameters<SubagentQueries['wait']>) {
    return this.queries.wait(...args);
  }

  steer(...args: Parameters<SubagentControl['steer']>) {
    return this.control.steer(...args);
  }
  followup(...args: Parameters<SubagentControl['followup']>) {
    return this.control.followup(...args);
  }
  interrupt(...args: Parameters<SubagentControl['interrupt']>) {
    return this.control.interrupt(...args);
  }

  kill(...args: Parameters<SubagentLifecycle['kill']>) {
    return this.lifecycle.kill(...args);
  }
  archive() {
    return this.lifecycle.archive();
  }
}
