/**
 * External agent runtimes as a gateway extension (docs/runtimes.md): the ACP and process runtimes sub-agents may run
 * on, and, at start, the end of any child a killed previous process of this gateway left running.
 */
import { join } from 'node:path';
import type { GatewayExtension, GatewayParts } from '../gateway/gateway-types.js';
import { AcpRuntime } from './acp-runtime.js';
import { ChildRecords } from './child-process.js';
import { ProcessRuntime } from './process-runtime.js';

export function runtimesFront(parts: GatewayParts): GatewayExtension {
  const records = new ChildRecords(parts.dataDir ? join(parts.dataDir, 'runtimes') : undefined);
  // Now, while the gateway is being built: before recovery wakes a lane that could start a child of its own.
  const reaped = records.reapLeftovers();
  if (reaped.length > 0)
    parts.log(`ended ${reaped.length} runtime children a previous process of this gateway left running (pids ${reaped.join(', ')})`);
  const deps = { config: () => parts.config, records };
  return { runtimes: { acp: new AcpRuntime(deps), process: new ProcessRuntime(deps) } };
}
