/**
 * External agent runtimes as a gateway extension (docs/runtimes.md): the ACP and process runtimes sub-agents may run
 * on, their children recorded with the gateway's others (`openChildRecords` ended what a killed previous process left).
 */
import type { ExtensionParts } from '../ports/extensions.js';
import type { GatewayExtension } from '../ports/extensions.js';
import type { ChildRecords } from '../processes.js';
import { AcpRuntime } from './acp-runtime.js';
import { ProcessRuntime } from './process-runtime.js';

export function runtimesFront(parts: ExtensionParts, records: ChildRecords): GatewayExtension {
  const deps = { config: () => parts.config, records };
  return { runtimes: { acp: new AcpRuntime(deps), process: new ProcessRuntime(deps) } };
}
