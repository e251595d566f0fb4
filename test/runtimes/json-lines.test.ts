/**
 * The JSON lines of CLI agents, read into a run's record (docs/runtimes.md): Claude Code's stream-json and Codex's
 * exec --json in the shapes their documentation gives (pi's is covered end to end by process-runtime.test.ts).
 */
import { describe, expect, it } from 'vitest';
import type { RuntimeUpdate } from '../../src/ports/runtimes.js';
import { JsonLineReader } from '../../src/runtimes/json-lines.js';
import { RunRecorder } from '../../src/runtimes/run-recorder.js';

async function read(lines: unknown[]) {
  const journaled: RuntimeUpdate[] = [];
  const recorder = new RunRecorder({ report: async (updates) => void journaled.push(...updates) });
  const reader = new JsonLineReader(recorder);
  for (const line of lines) reader.line(typeof line === 'string' ? line : JSON.stringify(line));
  await recorder.settled();
  return { recorder, reader, journaled };
}

describe('JSON lines of CLI agents', () => {
  it("Claude Code's stream-json: messages, a tool use and its result, and the result line", async () => {
    const { recorder, reader, journaled } = await read([
      { type: 'system', subtype: 'init', session_id: 's1' },
      {
        type: 'assistant',
        message: {
          content: [
            { type: 'text', text: 'Let me look.' },
            { type: 'tool_use', id: 'tu1', name: 'Bash', input: { command: 'ls' } },
          ],
        },
      },
      { type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 'tu1', content: 'a.txt\nb.txt' }] } },
      { type: 'assistant', message: { content: [{ type: 'text', text: 'Two files.' }] } },
      { type: 'result', subtype: 'success', is_error: false, result: 'Two files.' },
    ]);
    expect(recorder.lastMessage()).toBe('Two files.');
    expect(recorder.toolCalls()).toEqual([
      { id: 'tu1', title: 'Bash', status: 'completed', input: { command: 'ls' }, output: 'a.txt\nb.txt' },
    ]);
    expect(reader.verdict).toEqual({ result: 'Two files.' });
    expect(journaled.filter((update) => update.kind === 'line')).toHaveLength(5);
  });

  it("Claude Code's error result fails the run", async () => {
    const { reader } = await read([{ type: 'result', subtype: 'error_max_turns', is_error: true }]);
    expect(reader.verdict.failure).toBe('the agent reported an error: error_max_turns');
  });

  it("Codex's exec --json: a command as a tool call, the agent's message, and a failed turn", async () => {
    const { recorder, reader } = await read([
      { type: 'thread.started', thread_id: 't1' },
      { type: 'item.started', item: { id: 'i1', type: 'command_execution', command: 'npm test', status: 'in_progress' } },
      {
        type: 'item.completed',
        item: { id: 'i1', type: 'command_execution', command: 'npm test', aggregated_output: 'ok', exit_code: 0, status: 'completed' },
      },
      { type: 'item.completed', item: { id: 'i2', type: 'agent_message', text: 'Tests pass.' } },
      { type: 'turn.failed', error: { message: 'rate limited' } },
    ]);
    expect(recorder.lastMessage()).toBe('Tests pass.');
    expect(recorder.toolCalls()).toEqual([{ id: 'i1', title: 'npm test', kind: 'command_execution', status: 'completed', output: 'ok' }]);
    expect(reader.verdict.failure).toBe('the agent reported an error: rate limited');
  });

  it('a line that is not JSON, or of an unknown shape, is journaled and changes nothing else', async () => {
    const { recorder, journaled } = await read(['warming up...', { type: 'mystery', value: 1 }, { text: 'plain result' }]);
    expect(journaled.filter((update) => update.kind === 'line').map((update) => update.text)).toEqual([
      'warming up...',
      '{"type":"mystery","value":1}',
      '{"text":"plain result"}',
    ]);
    expect(recorder.lastMessage()).toBe('plain result');
  });

  it('a huge tool input is kept clipped, not whole', async () => {
    const { recorder } = await read([
      { type: 'tool_execution_start', toolCallId: 'w', toolName: 'write', args: { content: 'x'.repeat(50_000) } },
    ]);
    const [call] = recorder.toolCalls();
    expect(JSON.stringify(call.input).length).toBeLessThan(4200);
    expect(call.input).toEqual({ clipped: expect.stringContaining('more characters') });
  });
});

describe('a runaway child', () => {
  it('keeps and journals at most 4,000,000 characters of a run, and says so once', async () => {
    const line = JSON.stringify({ text: 'y'.repeat(100_000) });
    const { recorder, journaled } = await read([...Array.from({ length: 60 }, () => line), { type: 'result', result: 'r' }]);
    const kept = journaled.reduce((sum, update) => sum + JSON.stringify(update).length, 0);
    expect(kept).toBeLessThan(4_300_000);
    expect(journaled.filter((update) => update.kind === 'truncated')).toEqual([
      { kind: 'truncated', why: 'the child produced more than 4000000 characters; the rest is not kept' },
    ]);
    expect(recorder.messages().length).toBeLessThan(60);
  });
});
