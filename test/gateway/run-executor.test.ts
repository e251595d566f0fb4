/**
 * The tool loop gives the model the whole context at every step: the session's history, the new input,
 * the step's own tool calls and results, and inputs steered in, in that order. The SDK is handed only the
 * newest message (its schema check costs milliseconds for a long history), so each step's prepareStep
 * puts the history back: these tests hold that in place, for plain and streamed calls.
 */
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3Prompt } from '@ai-sdk/provider';
import type { ModelMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { measureRequest } from '../../src/models/request-size.js';
import { z } from 'zod';
import { executeRun } from '../../src/gateway/runs/run-executor.js';
import { ToolOffer } from '../../src/gateway/tooling/run-tools.js';
import { defineTool, REACHED_OUT } from '../../src/tools/tool-contract.js';
import { ScriptedLanguageModel } from '../../src/models/scripted-model.js';

/** The scripted model, with every prompt it was sent kept. */
class RecordingModel extends ScriptedLanguageModel {
  readonly prompts: LanguageModelV3Prompt[] = [];
  override doGenerate(options: LanguageModelV3CallOptions) {
    this.prompts.push(options.prompt);
    return super.doGenerate(options);
  }
  override doStream(options: LanguageModelV3CallOptions) {
    this.prompts.push(options.prompt);
    return super.doStream(options);
  }
}

const lookup = defineTool({
  name: 'lookup',
  description: 'Look a word up.',
  parameters: z.object({ word: z.string() }),
  execute: async ({ word }) => ({ meaning: `${word} means hello` }),
});

const history: ModelMessage[] = [
  { role: 'user', content: 'first question' },
  { role: 'assistant', content: [{ type: 'text', text: 'first answer' }] },
  { role: 'user', content: 'second question' },
  { role: 'assistant', content: [{ type: 'text', text: 'second answer' }] },
];

/** Each prompt message as role and text, tool calls and results as their names. */
function shape(prompt: LanguageModelV3Prompt): string[] {
  return prompt.map((message) => {
    if (message.role === 'system') return `system: ${message.content}`;
    const parts = message.content.map((part) => {
      if (part.type === 'text') return part.text;
      if (part.type === 'tool-call') return `call ${part.toolName}`;
      if (part.type === 'tool-result') return `result ${part.toolName}`;
      return part.type;
    });
    return `${message.role}: ${parts.join(' | ')}`;
  });
}

const question: ModelMessage = { role: 'user', content: 'what does salut mean?' };

function run(model: LanguageModelV3, options: { steer?: ModelMessage[]; stream?: boolean; history?: ModelMessage[] } = {}) {
  let steered = false;
  return executeRun({
    model,
    measureRequest,
    system: 'You are a tester.',
    messages: [...(options.history ?? history), question],
    tools: [lookup],
    toolContext: { runId: 'run-1', sessionKey: 'agent:t:main', agentId: 't', workspace: undefined, clock: { now: () => 0 } },
    maxSteps: 5,
    signal: new AbortController().signal,
    takeSteered: async () => {
      if (steered || !options.steer) return { inputIds: [], messages: [] };
      steered = true;
      return { inputIds: options.steer.map((_, i) => `steer-${i}`), messages: options.steer };
    },
    ...(options.stream ? { onDelta: () => {} } : {}),
  });
}

const script = {
  rules: [
    {
      match: 'salut',
      steps: [{ toolCalls: [{ tool: 'lookup', args: { word: 'salut' } }] }, { text: 'It means {{tool.lookup.meaning}}.' }],
    },
  ],
};
const before = [
  'system: You are a tester.',
  'user: first question',
  'assistant: first answer',
  'user: second question',
  'assistant: second answer',
  'user: what does salut mean?',
];

describe.each([false, true])('executeRun (streamed: %s)', (stream) => {
  it('sends the history, the input, and the step before, at every step', async () => {
    const model = new RecordingModel('t', script as never);
    const executed = await run(model, { stream });
    expect(executed.status).toBe('succeeded');
    expect(executed.finalText).toBe('It means salut means hello.');
    expect(model.prompts.map(shape)).toEqual([before, [...before, 'assistant: call lookup', 'tool: result lookup']]);
    // What the run adds to the transcript: its own messages, not the history it was given.
    expect(executed.messages.map((message) => message.role)).toEqual(['assistant', 'tool', 'assistant']);
  });

  it('puts a steered input after the step it arrived in, in the prompt and in what the run adds', async () => {
    const model = new RecordingModel('t', script as never);
    const executed = await run(model, { stream, steer: [{ role: 'user', content: 'also, be brief' }] });
    expect(model.prompts.map(shape)).toEqual([
      before,
      [...before, 'assistant: call lookup', 'tool: result lookup', 'user: also, be brief'],
    ]);
    expect(executed.messages.map((message) => message.role)).toEqual(['assistant', 'tool', 'user', 'assistant']);
  });

  it("counts each step's prompt characters as its JSON, for a history shared between runs (frozen, sized once) as for one that is not", async () => {
    const frozen = history.map((message) => Object.freeze(structuredClone(message)));
    const counts: number[] = [];
    for (const shared of [history, frozen, frozen]) {
      const executed = await run(new RecordingModel('t', script as never), { stream, history: shared });
      const firstStep = [...shared, question];
      const secondStep = [...firstStep, ...executed.messages.slice(0, 2)];
      const system = 'You are a tester.'.length;
      expect(executed.promptChars).toBe(system + JSON.stringify(firstStep).length + system + JSON.stringify(secondStep).length);
      counts.push(executed.promptChars);
    }
    expect(new Set(counts).size).toBe(1);
  });
});

describe('the tool offer, primed with what the run start read', () => {
  it('answers the first step from the primed lookups and looks again at the next', async () => {
    let looks = 0;
    const gated = defineTool({
      name: 'gated',
      description: 'Offered once the session has spawned.',
      available: async (session) => (await session.once(REACHED_OUT, async () => ((looks += 1), { spawned: true, sent: false }))).spawned,
      parameters: z.object({}),
      execute: async () => ({}),
    });
    const offer = new ToolOffer([gated], { sessionKey: 'agent:a:main', agentId: 'a', workspace: undefined }, undefined, {
      [REACHED_OUT]: { spawned: false, sent: false },
    });
    await offer.refresh();
    expect(looks).toBe(0);
    await offer.refresh();
    expect(looks).toBe(1);
  });
});
