/** `switchboard runs`: list, show, cancel and fork runs. */
import type { InputRecord, RunRecord } from '../ports/index.js';
import type { RunStepView, RunToolCall } from '../ports/gateway.js';
import { InvalidArgumentError } from 'commander';
import { cliCommand } from './client.js';
import { shorten, table } from './format.js';
import { program, client, configPath, parseLimit, withQuery, print, runRow } from './shared.js';

interface RunCompletions {
  sent: {
    parentSessionKey: string;
    outbox: { status: string; attempts: number; lastError: string | null };
    input: { inputId: string; status: string; runId: string | null } | null;
  }[];
  received: { inputId: string; childSessionKey: string }[];
}

const runs = program.command('runs').description('inspect runs');
runs
  .command('list')
  .description('runs, newest first')
  .option('--session <key>', 'only this session')
  .option('--limit <n>', 'at most n', parseLimit)
  .action(async (options: { session?: string; limit?: number }) => {
    const { runs: rows } = await client().request<{ runs: RunRecord[] }>(
      'GET',
      withQuery('/v1/runs', { sessionKey: options.session, limit: options.limit }),
    );
    print({ runs: rows }, () => table(rows.map(runRow), ['id', 'session', 'status', 'started', 'ms', 'calls', 'text']));
  });
runs
  .command('show <id>')
  .description('one run (by id or a unique prefix of it): status, usage, prompt size, inputs, tool calls and results, reply')
  .action(async (id: string) => {
    const shown = await client().request<{
      run: RunRecord;
      inputs: InputRecord[];
      steps: RunStepView[];
      toolCalls: RunToolCall[];
      completions: RunCompletions;
    }>('GET', `/v1/runs/${encodeURIComponent(id)}`);
    const { run, completions } = shown;
    print(shown, () =>
      [
        `run ${run.id} on ${run.sessionKey} (agent ${run.agentId}, model ${run.model})`,
        `  status:   ${run.status}${run.errorMessage ? ` - ${run.errorMessage}` : ''}${run.attempt > 1 ? ` (attempt ${run.attempt}: resumed ${run.attempt - 1} time(s))` : ''}`,
        `  started:  ${new Date(run.startedAt).toISOString()}${run.endedAt ? `, took ${run.endedAt - run.startedAt} ms` : ''}`,
        `  usage:    ${run.usage.modelCalls} model call(s), ${run.usage.steps} step(s), ${run.usage.inputTokens} tokens in (${run.usage.cachedInputTokens ?? 0} from the prompt cache), ${run.usage.outputTokens} out`,
        `  request:  ${run.request.bytes} bytes sent in ${run.usage.modelCalls} call(s): tool definitions ${run.request.toolBytes}, system text ${run.request.systemBytes}, messages ${run.request.bytes - run.request.toolBytes - run.request.systemBytes}`,
        `  prompt:   ${run.promptChars} characters of messages and system text; the framework's own ${run.preambleChars}`,
        `  inputs:   ${shown.inputs.map((input) => `${input.id} (${input.mode}, ${input.provenance.kind})`).join(', ') || '-'}`,
        `  steps:    ${shown.steps.length === 0 ? '-' : `${shown.steps.length}`}`,
        ...shown.steps.map(
          (step) =>
            `    ${step.step}. ${step.model}, ${step.inputTokens} tokens in, ${step.outputTokens} out${step.ms === null ? '' : `, ${step.ms} ms`}; attempt ${step.attempt}${step.attempt < run.attempt ? ' (replayed after, not asked again)' : ''}; ${step.tools.length ? `tools ${step.tools.join(', ')} (${step.state === 'settled' ? 'results committed' : 'results not committed'})` : step.state === 'final' ? 'the final answer' : 'no tools'}`,
        ),
        `  tools:    ${shown.toolCalls.length === 0 ? '-' : `${shown.toolCalls.length} call(s)`}`,
        ...shown.toolCalls.map((call) => `    ${call.toolName}(${shorten(call.input, 80)}) -> ${shorten(call.output, 100)}`),
        `  reply:    ${run.finalText ?? '-'}`,
        ...completions.sent.map(
          (sent) =>
            `  completion to ${sent.parentSessionKey}: outbox ${sent.outbox.status} after ${sent.outbox.attempts} attempt(s)${sent.outbox.lastError ? ` (${sent.outbox.lastError})` : ''}; ${sent.input ? `input ${sent.input.inputId} ${sent.input.status}${sent.input.runId ? ` by run ${sent.input.runId}` : ''}` : 'not yet in the parent'}`,
        ),
        ...completions.received.map((received) => `  completion from ${received.childSessionKey} (input ${received.inputId})`),
      ].join('\n'),
    );
  });
runs
  .command('cancel <id>')
  .description('cancel an active run (by id or a unique prefix); it is recorded cancelled')
  .action(async (id: string) => {
    const { cancelled } = await client().request<{ cancelled: boolean }>('POST', `/v1/runs/${encodeURIComponent(id)}/cancel`);
    print({ cancelled }, () => (cancelled ? `cancelled run ${id}` : `run ${id} is not active; nothing to cancel`));
  });
runs
  .command('fork <id>')
  .description(
    'start a new session from the state after the first n steps of a run (by id or a unique prefix): they are replayed without asking the model, which is asked from step n on',
  )
  .requiredOption('--step <n>', 'how many of the run\'s steps to keep (0 to n-1 as "runs show" numbers them)', parseStep)
  .action(async (id: string, options: { step: number }) => {
    const forked = await client().request<{ sessionKey: string; runId: string }>('POST', `/v1/runs/${encodeURIComponent(id)}/fork`, {
      step: options.step,
    });
    print(forked, () =>
      [
        `forked run ${id} at step ${options.step}: session ${forked.sessionKey}, run ${forked.runId}`,
        options.step === 0
          ? "  no step is kept: the model is asked again from the run's input, after the history before it"
          : `  steps 0 to ${options.step - 1} are replayed from the source run; the model is asked from step ${options.step} on`,
        `  follow it:   ${cliCommand(`sessions tail ${forked.sessionKey} --after 0`, configPath())}`,
        `  its outcome: ${cliCommand(`runs show ${forked.runId}`, configPath())}`,
        `  go on in it: ${cliCommand(`send ${forked.sessionKey} <message>`, configPath())}`,
      ].join('\n'),
    );
  });

function parseStep(value: string): number {
  const step = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(step))
    throw new InvalidArgumentError(`expected how many steps to keep, a whole number of 0 or more, got "${value}"`);
  return step;
}
