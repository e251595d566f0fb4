/**
 * Deferred tools (docs/tools.md, "What a model call costs"): every tool definition is sent again with every model
 * call, so the tools most runs never use (the workspace, exec, memory, mailbox and MCP tools, `team_shutdown`, and
 * those `tools.defer` names) are sent as names only, in the description of one small tool, `tools_load`. A call to it loads the named tools: their full definitions are
 * sent from the next step on, and in the session's later runs once its history shows they were loaded or used.
 */
import type { ModelMessage } from 'ai';
import { z } from 'zod';
import { defineTool } from '../../tools/tool-contract.js';
import type { GatewayTool } from '../../ports/tools.js';
import type { StepToolResult } from '../../ports/steps.js';
import type { RefusedTool } from './tool-offer.js';

export const CATALOGUE_TOOL = 'tools_load';

/**
 * The tools the steps of the run's earlier attempts (replayed on resume, not run again) loaded or called: they stay
 * loaded when the run goes on.
 */
export function loadedInSteps(steps: readonly { toolNames: readonly string[]; results: readonly StepToolResult[] | null }[]): Set<string> {
  const loaded = new Set<string>();
  for (const step of steps) {
    for (const name of step.toolNames) loaded.add(name);
    for (const result of step.results ?? []) {
      if (result.toolName !== CATALOGUE_TOOL) continue;
      const answered = (result.output as { loaded?: unknown } | undefined)?.loaded;
      if (!Array.isArray(answered)) continue;
      for (const entry of answered)
        if (typeof (entry as { name?: unknown })?.name === 'string') loaded.add((entry as { name: string }).name);
    }
  }
  return loaded;
}

/** The tools the session's history loaded or called: they stay loaded in its later runs. */
export function loadedInHistory(messages: readonly ModelMessage[]): Set<string> {
  const loaded = new Set<string>();
  for (const message of messages) {
    if (message.role !== 'assistant' || typeof message.content === 'string') continue;
    for (const part of message.content) {
      if (part.type !== 'tool-call') continue;
      loaded.add(part.toolName);
      if (part.toolName === CATALOGUE_TOOL) for (const name of namesIn(part.input)) loaded.add(name);
    }
  }
  return loaded;
}

function namesIn(input: unknown): string[] {
  const names = (input as { names?: unknown } | undefined)?.names;
  return Array.isArray(names) ? names.filter((name): name is string => typeof name === 'string') : [];
}

/** `read_file write_file mcp__files__{read_text_file,list_directory}`: names, with each MCP server's prefix once. */
export function listNames(names: readonly string[]): string {
  const plain: string[] = [];
  const servers = new Map<string, string[]>();
  for (const name of names) {
    const mcp = /^(mcp__[^_]+(?:_[^_]+)*__)(.+)$/.exec(name);
    if (mcp) servers.set(mcp[1], [...(servers.get(mcp[1]) ?? []), mcp[2]]);
    else plain.push(name);
  }
  const grouped = [...servers].map(([prefix, tools]) => (tools.length === 1 ? `${prefix}${tools[0]}` : `${prefix}{${tools.join(',')}}`));
  return [...plain, ...grouped].join(' ');
}

/** One schema for every run's `tools_load`, so its JSON Schema is made once (toolJsonSchema keeps it per schema). */
const LOAD_ARGS = z.object({
  names: z.array(z.string({ error: 'must be a list of tool names' }), { error: 'must be a list of tool names' }),
});

export class ToolCatalogue {
  readonly loaded: Set<string>;
  private readonly refusals: ReadonlyMap<string, string>;
  /** The deferred tools the session may load now (the offer's last answer); only these are loaded. */
  private offerable = new Set<string>();

  constructor(
    private readonly deferred: ReadonlyMap<string, GatewayTool>,
    loaded: Iterable<string>,
    /** The tools the session is not offered, with the reason each is refused (tool-offer.ts). */
    refused: readonly RefusedTool[] = [],
    /** The tools sent whole already: a load of one says so, instead of calling it no tool. */
    private readonly whole: ReadonlySet<string> = new Set(),
  ) {
    this.loaded = new Set(loaded);
    this.refusals = new Map(refused.map((tool) => [tool.name, tool.refusal.error]));
  }

  /** The deferred tools of `offerable` not loaded yet; `offerable` is what a load may load from now on. */
  pending(offerable: Iterable<string>): string[] {
    this.offerable = new Set([...offerable].filter((name) => this.deferred.has(name)));
    return [...this.offerable].filter((name) => !this.loaded.has(name));
  }

  /** What `tools_load` is shown: the names it can load. */
  description(pending: readonly string[]): string {
    return `Load tools before use: ${listNames(pending)}`;
  }

  /** Why the session may not load this tool, or undefined when it may (or no such tool exists). */
  private refusalOf(name: string): string | undefined {
    const refusal = this.refusals.get(name);
    if (refusal !== undefined) return refusal;
    if (this.deferred.has(name) && !this.offerable.has(name)) return `${name} is not available in this session (it cannot succeed here)`;
    return undefined;
  }

  /** `tools_load` itself. */
  tool(): GatewayTool {
    return defineTool({
      name: CATALOGUE_TOOL,
      description: 'Load tools before use.',
      parameters: LOAD_ARGS,
      execute: async ({ names }) => {
        // A tool the session is not offered is refused with its reason: a model told "loaded" would call it in vain.
        const refused = names
          .map((name) => ({ name, reason: this.refusalOf(name) }))
          .filter((entry): entry is { name: string; reason: string } => entry.reason !== undefined);
        const whole = names.filter((name) => this.whole.has(name));
        const unknown = names.filter((name) => !this.deferred.has(name) && !this.refusals.has(name) && !this.whole.has(name));
        const found = names.filter((name) => this.offerable.has(name));
        for (const name of found) this.loaded.add(name);
        const errors = [
          ...(refused.length ? [`not loaded: ${refused.map((entry) => `${entry.name} (${entry.reason})`).join('; ')}`] : []),
          ...(unknown.length ? [`no such tool to load: ${unknown.join(', ')}`] : []),
        ];
        return {
          loaded: found.map((name) => ({ name, description: this.deferred.get(name)!.description })),
          ...(found.length ? { note: 'call them from your next step' } : {}),
          ...(whole.length ? { sentWhole: whole } : {}),
          ...(refused.length ? { refused } : {}),
          ...(unknown.length ? { unknown } : {}),
          ...(errors.length ? { error: errors.join('; ') } : {}),
        };
      },
    });
  }
}
