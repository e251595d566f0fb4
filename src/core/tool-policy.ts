/**
 * Tool policy: each layer (global -> agent -> sandbox -> sub-agent) may only narrow what the one above
 * allowed. Patterns are case-insensitive and `*` matches any run of characters.
 */
export interface ToolPolicyLayer {
  /** Where the layer comes from, e.g. "tools" or "agents.list[0].tools"; used in explanations. */
  source: string;
  allow?: readonly string[];
  deny?: readonly string[];
  /** Calls that need approval: `<tool pattern>` or `<tool pattern>:<subject pattern>` (docs/gates.md). */
  ask?: readonly string[];
}

/** The `ask` pattern that asks for approval of this call, with its layer's key; undefined when none does (layers add asks). */
export function askingRule(
  name: string,
  subject: string,
  layers: readonly ToolPolicyLayer[],
): { source: string; pattern: string } | undefined {
  for (const layer of layers) {
    for (const pattern of layer.ask ?? []) {
      const colon = pattern.indexOf(':');
      const tool = colon < 0 ? pattern : pattern.slice(0, colon);
      if (!matchesPattern(name, tool)) continue;
      if (colon < 0 || matchesPattern(subject, pattern.slice(colon + 1))) return { source: `${layer.source}.ask`, pattern };
    }
  }
  return undefined;
}

/** Each pattern's expression, made once: patterns come from the config, and are matched at every run's tool offer. */
const expressions = new Map<string, RegExp>();

export function matchesPattern(name: string, pattern: string): boolean {
  let expression = expressions.get(pattern);
  if (!expression) {
    const escaped = pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'));
    expression = new RegExp(`^${escaped.join('.*')}$`, 'is');
    // A bound, should patterns ever come from somewhere other than the config.
    if (expressions.size >= 1000) expressions.clear();
    expressions.set(pattern, expression);
  }
  return expression.test(name);
}

export function matchesAny(name: string, patterns: readonly string[]): boolean {
  return patterns.some((pattern) => matchesPattern(name, pattern));
}

/** The tools left after every layer, in the order given. */
export function applyToolPolicy(available: readonly string[], layers: readonly ToolPolicyLayer[]): string[] {
  return available.filter((name) => toolPolicyDenial(name, layers) === undefined);
}

/** Why the layers leave this tool out, naming the layer's key; undefined when they let it through. */
export function toolPolicyDenial(name: string, layers: readonly ToolPolicyLayer[]): string | undefined {
  for (const layer of layers) {
    if (layer.allow !== undefined && !matchesAny(name, layer.allow))
      return `${layer.source}.allow (${JSON.stringify(layer.allow)}) does not include it`;
    if (layer.deny && matchesAny(name, layer.deny)) return `${layer.source}.deny (${JSON.stringify(layer.deny)}) denies it`;
  }
  return undefined;
}
