/**
 * `session/request_permission`, answered by policy (docs/runtimes.md): `acp.agents.<name>.permissions` per ACP tool
 * kind, over defaults that allow looking and deny running commands; edits are allowed inside the workdir only, and no
 * kind is allowed on a location outside it. A change the gateway cannot check (an edit, delete or move that names no
 * location) is denied unless the config allows its kind outright. A kind set to `ask` (with its locations inside the
 * workdir) is put to a person as an approval request (docs/gates.md); every other decision is the policy's alone.
 */
import type { PermissionOption, RequestPermissionResponse, ToolCallUpdate } from '@agentclientprotocol/sdk';
import type { AcpToolKind } from '../config/schema-runtimes.js';
import { resolveExisting, resolveForWrite, WorkspaceRefusal } from '../tools/workspace-fs.js';

export type PermissionPolicy = Partial<Record<AcpToolKind, 'allow' | 'deny' | 'ask'>>;

const DEFAULTS: Record<AcpToolKind, 'allow' | 'deny'> = {
  read: 'allow',
  search: 'allow',
  think: 'allow',
  fetch: 'allow',
  switch_mode: 'allow',
  other: 'allow',
  edit: 'allow',
  delete: 'allow',
  move: 'allow',
  execute: 'deny',
};

/** The kinds that change files: allowed by default only where the gateway can see that they stay in the workdir. */
const CHANGES = new Set<AcpToolKind>(['edit', 'delete', 'move']);

export interface PermissionDecision {
  allow: boolean;
  why: string;
  /** The kind is set to `ask` and its locations are inside the workdir: a person decides (docs/gates.md). */
  ask?: true;
}

/** Whether the tool call may go ahead: its kind's setting, then every location it names must be inside the workdir. */
export async function decidePermission(
  call: Pick<ToolCallUpdate, 'kind' | 'locations' | 'title'>,
  root: string,
  policy: PermissionPolicy,
  source: string,
): Promise<PermissionDecision> {
  const kind: AcpToolKind = call.kind ?? 'other';
  const setting = policy[kind] ?? DEFAULTS[kind];
  const from = policy[kind] ? `${source}.${kind}` : `the default for ${kind}`;
  if (setting === 'deny') return { allow: false, why: `${kind} is denied (${from})` };
  if (CHANGES.has(kind) && !policy[kind] && !call.locations?.length)
    return {
      allow: false,
      why: `${kind} names no location, so the gateway cannot check that it stays inside the workdir ${root}; denied by default (set ${source}.${kind} to "allow" to allow what cannot be checked)`,
    };
  for (const location of call.locations ?? []) {
    try {
      // An existing file or folder (the workdir itself included), else where a new file would land.
      await resolveExisting(root, location.path).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return resolveForWrite(root, location.path);
        throw error;
      });
    } catch (error) {
      if (error instanceof WorkspaceRefusal) return { allow: false, why: `${location.path} is outside the workdir ${root}` };
      return { allow: false, why: `${location.path} cannot be checked: ${(error as Error).message}` };
    }
  }
  if (setting === 'ask') return { allow: false, ask: true, why: `${from} is "ask"` };
  return { allow: true, why: `${kind} is allowed (${from})${call.locations?.length ? ' inside the workdir' : ''}` };
}

/** The option that says the decision once (else always); `cancelled` when the agent offered none that does. */
export function answerWith(options: readonly PermissionOption[], allow: boolean): RequestPermissionResponse {
  const kinds = allow ? (['allow_once', 'allow_always'] as const) : (['reject_once', 'reject_always'] as const);
  for (const kind of kinds) {
    const option = options.find((candidate) => candidate.kind === kind);
    if (option) return { outcome: { outcome: 'selected', optionId: option.optionId } };
  }
  return { outcome: { outcome: 'cancelled' } };
}
