/**
 * The deterministic `scripted` provider: a real AI SDK language model (LanguageModelV3) whose answers
 * come from rules in the config, so demos and tests drive the real tool loop without a model API.
 *
 * Contract:
 * - The first rule whose `match` (a case-insensitive regular expression) finds the newest inputs answers.
 * - A rule's `steps` are played one per model call within a run: step N answers the N-th call after the
 *   newest user message. `reply: "..."` is short for `steps: [{ text: "..." }]`. Past the last step the
 *   model stops with no text.
 * - Templates: {{input}} (the newest input without its provenance line), {{inputs}} (all new inputs),
 *   {{agent}}, {{match.N}} (regex groups), {{tool.NAME}} and {{tool.NAME.path.to.field}} (results of
 *   tool calls made since the newest input), {{from.agent}} and {{from.session}} (provenance).
 * - `delayMs` waits before answering (honouring abort); `error` fails the call like a provider would.
 */
import {
  APICallError,
  type LanguageModelV3,
  type LanguageModelV3CallOptions,
  type LanguageModelV3Content,
  type LanguageModelV3GenerateResult,
  type LanguageModelV3Prompt,
  type LanguageModelV3StreamPart,
  type LanguageModelV3Usage,
} from '@ai-sdk/provider';
import type { ScriptedModelConfig, ScriptedRule } from '../config/schema.js';
import { sleep } from '../kit/retry.js';

const PROVENANCE_LINE = /^\[message from ([^\]]*)\]\n/;
/**
 * Marker lines the gateway puts before an input: provenance, notes and exchange steps. Templates never
 * see them; rules are matched without the provenance and note lines, but with the exchange line
 * ("[agent-to-agent turn 2 of 5, ...]"), so a rule can answer a given ping-pong turn.
 */
const MARKER_LINES = /^(\[(message from|note:|agent-to-agent turn|the reply to your) [^\n]*\]\n)+/;

interface ScriptTurn {
  inputs: string[];
  stepIndex: number;
  toolResults: Map<string, unknown>;
}

export class ScriptedLanguageModel implements LanguageModelV3 {
  readonly specificationVersion = 'v3';
  readonly provider: string;
  readonly supportedUrls = {};

  constructor(
    readonly modelId: string,
    private readonly script: ScriptedModelConfig,
    providerName = 'scripted',
  ) {
    this.provider = providerName;
  }

  async doGenerate(options: LanguageModelV3CallOptions): Promise<LanguageModelV3GenerateResult> {
    const { parts, usage, finishReason } = await this.answer(options);
    const content: LanguageModelV3Content[] = parts.map((part) =>
      part.type === 'text'
        ? { type: 'text', text: part.text }
        : { type: 'tool-call', toolCallId: part.toolCallId, toolName: part.toolName, input: part.input },
    );
    return { content, finishReason, usage, warnings: [], request: requestOf(options) };
  }

  async doStream(options: LanguageModelV3CallOptions) {
    const { parts, usage, finishReason } = await this.answer(options);
    const chunk = this.script.chunkChars ?? 16;
    const modelId = this.modelId;
    const stream = new ReadableStream<LanguageModelV3StreamPart>({
      start(controller) {
        controller.enqueue({ type: 'stream-start', warnings: [] });
        controller.enqueue({ type: 'response-metadata', modelId });
        parts.forEach((part, index) => {
          if (part.type === 'text') {
            const id = `text-${index}`;
            controller.enqueue({ type: 'text-start', id });
            for (let at = 0; at < part.text.length; at += chunk)
              controller.enqueue({ type: 'text-delta', id, delta: part.text.slice(at, at + chunk) });
            controller.enqueue({ type: 'text-end', id });
          } else {
            controller.enqueue({ type: 'tool-call', toolCallId: part.toolCallId, toolName: part.toolName, input: part.input });
          }
        });
        controller.enqueue({ type: 'finish', usage, finishReason });
        controller.close();
      },
    });
    return { stream, request: requestOf(options) };
  }

  private async answer(options: LanguageModelV3CallOptions) {
    const turn = readTurn(options.prompt);
    const joined = turn.inputs.join('\n');
    const { rule, match } = findRule(this.script.rules, joined);
    if (rule?.delayMs) await sleep(rule.delayMs, options.abortSignal);
    if (rule?.error) {
      throw new APICallError({
        message: rule.error,
        url: `scripted://${this.modelId}`,
        requestBodyValues: requestOf(options).body,
        statusCode: 500,
        isRetryable: false,
      });
    }
    const steps = rule
      ? (rule.steps ?? (rule.reply !== undefined ? [{ text: rule.reply }] : []))
      : [{ text: `[scripted model ${this.modelId}: no rule matches "${clip(joined)}"]` }];
    const step = turn.stepIndex < steps.length ? steps[turn.stepIndex] : undefined;
    const system = options.prompt.find((message) => message.role === 'system');
    const vars = templateVars(turn, match, system?.role === 'system' ? system.content : '');
    const parts: ({ type: 'text'; text: string } | { type: 'tool-call'; toolCallId: string; toolName: string; input: string })[] = [];
    if (step?.text) parts.push({ type: 'text', text: render(step.text, vars) });
    (step?.toolCalls ?? []).forEach((call, index) => {
      parts.push({
        type: 'tool-call',
        toolCallId: `call_${turn.stepIndex}_${index}`,
        toolName: call.tool,
        input: JSON.stringify(renderDeep(call.args, vars)),
      });
    });
    const promptChars = textChars(options.prompt);
    const outputChars = parts.reduce((sum, part) => sum + (part.type === 'text' ? part.text.length : part.input.length), 0);
    const usage: LanguageModelV3Usage = {
      inputTokens: { total: Math.ceil(promptChars / 4), noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: Math.ceil(outputChars / 4), text: undefined, reasoning: undefined },
    };
    const hasCalls = parts.some((part) => part.type === 'tool-call');
    return { parts, usage, finishReason: { unified: hasCalls ? ('tool-calls' as const) : ('stop' as const), raw: undefined } };
  }
}

/** Characters of a prompt's text (the parts that are not text, as JSON): the input tokens are a quarter of it. */
function textChars(prompt: LanguageModelV3Prompt): number {
  let chars = 0;
  for (const message of prompt) {
    if (typeof message.content === 'string') chars += message.content.length;
    else
      for (const part of message.content)
        chars += part.type === 'text' || part.type === 'reasoning' ? part.text.length : JSON.stringify(part).length;
  }
  return chars;
}

function clip(text: string): string {
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function readTurn(prompt: LanguageModelV3Prompt): ScriptTurn {
  let lastUser = -1;
  for (let i = prompt.length - 1; i >= 0; i -= 1) {
    if (prompt[i].role === 'user') {
      lastUser = i;
      break;
    }
  }
  // The new inputs are the run of user messages ending at lastUser.
  // A gateway note on its own (e.g. "[note: run interrupted ...]") closes what came before it.
  const isNote = (message: LanguageModelV3Prompt[number]) =>
    message.role === 'user' && message.content.every((part) => part.type === 'text' && /^\[note: [^\n]*\]$/.test(part.text));
  let firstUser = lastUser;
  while (firstUser > 0 && prompt[firstUser - 1].role === 'user' && !isNote(prompt[firstUser - 1])) firstUser -= 1;
  const inputs: string[] = [];
  for (let i = firstUser; i <= lastUser && i >= 0; i += 1) {
    const message = prompt[i];
    if (message.role === 'user') inputs.push(message.content.map((part) => (part.type === 'text' ? part.text : '')).join(''));
  }
  const toolResults = new Map<string, unknown>();
  let stepIndex = 0;
  for (let i = lastUser + 1; i < prompt.length; i += 1) {
    const message = prompt[i];
    if (message.role === 'assistant') stepIndex += 1;
    if (message.role === 'tool') {
      for (const part of message.content) {
        if (part.type !== 'tool-result') continue;
        const output = part.output;
        const value =
          output.type === 'json' || output.type === 'text' || output.type === 'error-text' || output.type === 'error-json'
            ? output.value
            : null;
        toolResults.set(part.toolName, value);
      }
    }
  }
  return { inputs, stepIndex, toolResults };
}

function findRule(rules: ScriptedRule[], text: string): { rule?: ScriptedRule; match?: RegExpMatchArray } {
  const stripped = text
    .split('\n')
    .filter((line) => !/^\[(message from|note:) [^\n]*\]$/.test(line))
    .join('\n');
  for (const rule of rules) {
    const match = stripped.match(new RegExp(rule.match, 'is'));
    if (match) return { rule, match };
  }
  return {};
}

function templateVars(turn: ScriptTurn, match: RegExpMatchArray | undefined, system: string) {
  const newest = turn.inputs.at(-1) ?? '';
  const provenance = newest.match(PROVENANCE_LINE)?.[1] ?? '';
  const field = (name: string) => provenance.match(new RegExp(`${name} ([^,)\\s]+)`))?.[1] ?? '';
  return {
    input: newest.replace(MARKER_LINES, ''),
    inputs: turn.inputs.map((text) => text.replace(MARKER_LINES, '')).join('\n'),
    agent: system.match(/You are agent "([^"]+)"/)?.[1] ?? '',
    match: match ? [...match] : [],
    tool: Object.fromEntries(turn.toolResults),
    // The line names the agent only where the session key does not (agent:<id>:...).
    from: { agent: field('agent') || (field('session').match(/^agent:([^:]+):/)?.[1] ?? ''), session: field('session') },
  };
}

function lookup(root: unknown, path: string[]): unknown {
  let current = root;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function render(template: string, vars: object): string {
  return template.replace(/\{\{\s*([a-zA-Z0-9_.-]+)\s*\}\}/g, (_, path: string) => {
    const value = lookup(vars, path.split('.'));
    if (value === undefined || value === null) return '';
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
}

function renderDeep(value: unknown, vars: object): unknown {
  if (typeof value === 'string') return render(value, vars);
  if (Array.isArray(value)) return value.map((item) => renderDeep(item, vars));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderDeep(v, vars)]));
  return value;
}

/** What it was given is its request: the same prompt and tools an HTTP provider would serialise. */
function requestOf(options: LanguageModelV3CallOptions): { body: unknown } {
  return { body: { prompt: options.prompt, tools: options.tools } };
}
