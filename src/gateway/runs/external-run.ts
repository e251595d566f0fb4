/**
 * Which external runtime a sub-agent runs on (docs/runtimes.md; the port is ports/runtimes.ts): the session runner
 * hands such a run to the runtime its sub-agent record names, and commits what comes back as it commits a model run.
 */
import type { RuntimeKind } from '../../core/session-key.js';

/** `acp:<name>` / `process:<name>` as stored on the sub-agent record. */
export function parseRuntime(runtime: string): { kind: RuntimeKind; name: string } | undefined {
  const at = runtime.indexOf(':');
  const kind = runtime.slice(0, at);
  if (at < 0 || (kind !== 'acp' && kind !== 'process')) return undefined;
  return { kind, name: runtime.slice(at + 1) };
}
