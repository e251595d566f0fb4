/**
 * The gateway's extensions (gateway-types.ts) taken together: the tools they give every agent and each agent, the
 * outbox kinds they deliver, the held results they settle, and their lives (started after recovery, stopped first).
 */
import type { HeldResultSource } from '../ports/runtimes.js';
import type { GatewayExtension } from '../ports/extensions.js';
import type { OutboxDispatcher } from './durability/outbox.js';
import type { RecoveryReport } from '../ports/index.js';
import type { GatewayTool } from '../ports/tools.js';
import type { ExternalRuntimes } from '../ports/runtimes.js';

export class Extensions {
  /** The tools every agent may be offered. */
  readonly tools: readonly GatewayTool[];
  private readonly agentTools: ((agentId: string) => Promise<readonly GatewayTool[]>)[];

  /** The external runtimes sub-agents may run on (docs/runtimes.md). */
  readonly runtimes: ExternalRuntimes;

  constructor(private readonly list: readonly GatewayExtension[]) {
    this.tools = list.flatMap((extension) => extension.tools ?? []);
    this.runtimes = Object.assign({}, ...list.map((extension) => extension.runtimes ?? {}));
    this.agentTools = list.flatMap((extension) => (extension.agentTools ? [extension.agentTools] : []));
  }

  /** The tools an agent's sessions may be offered: every agent's, and those given to this one (MCP servers'). */
  async toolsFor(agentId: string): Promise<readonly GatewayTool[]> {
    if (this.agentTools.length === 0) return this.tools;
    return [...this.tools, ...(await Promise.all(this.agentTools.map((tools) => tools(agentId)))).flat()];
  }

  registerDeliveries(outbox: Pick<OutboxDispatcher, 'register'>): void {
    for (const extension of this.list)
      for (const [kind, handler] of Object.entries(extension.deliveries ?? {})) outbox.register(kind, handler);
  }

  get heldResults(): HeldResultSource[] {
    return this.list.flatMap((extension) => extension.heldResults ?? []);
  }

  get afterRecovery(): ((report: RecoveryReport) => Promise<void>)[] {
    return this.list.flatMap((extension) => (extension.afterRecovery ? [extension.afterRecovery] : []));
  }

  /** Why a write to this absolute path is refused to the agent now (a path another holds reserved), or undefined. */
  async writeRefusal(agentId: string, path: string): Promise<string | undefined> {
    for (const extension of this.list) {
      const refusal = await extension.writeGuard?.(agentId, path);
      if (refusal) return refusal;
    }
    return undefined;
  }

  async start(): Promise<void> {
    for (const extension of this.list) await extension.start?.();
  }

  /** Asks every extension to stop at once; settles when all have (a failed stop is logged by `onError`, not thrown). */
  stop(onError: (error: unknown) => void): Promise<void> {
    return Promise.all(
      this.list.map(async (extension) => {
        try {
          await extension.stop?.();
        } catch (error) {
          onError(error);
        }
      }),
    ).then(() => undefined);
  }
}
