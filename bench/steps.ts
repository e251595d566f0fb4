/**
 * Durable steps (issue 54): what a step's commit costs, and what it saves. (1) A five-step run (each step one tool call,
 * then the answer) on the zero-latency scripted model, with `durability: "steps"` against `"run"` (only the run's end
 * commits), alternated in rounds in one run, with synchronous NORMAL and FULL. (2) Runs on a local OpenAI-compatible
 * server, each SIGKILLed once at a random point and restarted, with each durability: the model calls beyond one per
 * step that the kills cost.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfigText } from '../src/config/load.js';
import { startGateway } from '../src/app.js';
import { SqliteStore, type SqliteSynchronous } from '../src/store/sqlite/sqlite-store.js';
import { openWorkerStore } from '../src/store/worker/worker-store.js';
import type { RunRecord } from '../src/ports/index.js';
import { FakeProviderServer } from '../test/helpers/fake-provider.js';
import { startGatewayProcess, stopGatewayProcess, tempConfig } from '../test/helpers/process.js';
import { STEPS, stepOf, stepperAnswer } from '../test/helpers/stepper-model.js';
import { fmt, judged, percentile } from './judged.js';
import type { SectionOptions } from './sections.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'sb-bench-steps-'));

type Durability = 'steps' | 'run';

/** Where the store runs (`store.sqlite.thread`): on the event loop, as a gateway runs it by default, or on its worker thread. */
type Thread = 'worker' | 'main';

async function fiveStepGateway(durability: Durability, synchronous: SqliteSynchronous, thread: Thread) {
  const step = '{ toolCalls: [{ tool: "time_now", args: {} }] }';
  const { config } = parseConfigText(
    `{
      agents: { defaults: { durability: "${durability}" }, list: [{ id: "five", model: "scripted/five" }] },
      models: { providers: { scripted: { type: "scripted", models: { five: { rules: [
        { steps: [${Array.from({ length: STEPS }, () => step).join(', ')}, { text: "done" }] },
      ] } } } } },
    }`,
    '/bench-steps.json5',
    {},
  );
  const options = { path: join(tmp(), 'steps.db'), synchronous, exclusive: true };
  const store = thread === 'worker' ? await openWorkerStore(options) : await SqliteStore.open(options);
  const gateway = await startGateway({ config, store, gatewayId: `bench-${durability}` });
  let next = 0;
  return {
    /** One five-step run, sent and waited for; its wall time in ms. */
    async run(): Promise<number> {
      const start = performance.now();
      const sent = await gateway.send({ target: `agent:five:bench:direct:p${next++}`, message: 'go' });
      const outcome = await gateway.waitForInput(sent.input.id, 30_000);
      if (outcome.status !== 'completed' || outcome.run.status !== 'succeeded') throw new Error(`a five-step run ended ${outcome.status}`);
      return performance.now() - start;
    },
    async close() {
      await gateway.stop();
      await store.close();
    },
  };
}

/** p50 of the five-step run with each durability, alternated in rounds so that the machine's drift hits both alike. */
async function stepCommitCost(synchronous: SqliteSynchronous, thread: Thread, runsPerRound: number, rounds: number) {
  const steps = await fiveStepGateway('steps', synchronous, thread);
  const run = await fiveStepGateway('run', synchronous, thread);
  const times: Record<Durability, number[]> = { steps: [], run: [] };
  for (let i = 0; i < 20; i += 1) {
    await steps.run();
    await run.run();
  }
  for (let round = 0; round < rounds; round += 1) {
    for (const [name, gateway] of [
      ['steps', steps],
      ['run', run],
    ] as const) {
      const latencies: number[] = [];
      for (let i = 0; i < runsPerRound; i += 1) latencies.push(await gateway.run());
      times[name].push(percentile(latencies, 50));
    }
  }
  await steps.close();
  await run.close();
  const median = (values: number[]) => percentile(values, 50);
  return { stepsMs: median(times.steps), runMs: median(times.run), ratio: median(times.steps) / median(times.run) };
}

/** `kills` runs of the stepper model, each SIGKILLed once at a random point: the model calls beyond one per step. */
async function killSavings(durability: Durability, kills: number) {
  const provider = await new FakeProviderServer().start();
  provider.responder = stepperAnswer;
  provider.delayMs = 60;
  const { configPath } = tempConfig(`{
    recovery: { retryInterrupted: 3 },
    agents: { defaults: { durability: "${durability}", workspace: ${JSON.stringify(tmp())} }, list: [{ id: "stepper", model: "fake/m" }] },
    models: { providers: { fake: { type: "openai-compatible", baseURL: "${provider.url}/v1" } } },
  }`);
  let gw = await startGatewayProcess(configPath);
  let extra = 0;
  try {
    for (let i = 1; i <= kills; i += 1) {
      const task = `t${i}`;
      const sent = await gw.request<{ sessionKey: string }>('POST', '/v1/send', {
        target: 'stepper',
        peer: task,
        message: `do task ${task}`,
      });
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.floor(Math.random() * (STEPS + 1) * 70)));
      await stopGatewayProcess(gw, 'SIGKILL');
      gw = await startGatewayProcess(configPath);
      for (;;) {
        const { body } = await gw.request<{ runs: RunRecord[] }>('GET', `/v1/runs?sessionKey=${encodeURIComponent(sent.body.sessionKey)}`);
        if (body.runs.some((run) => run.status === 'succeeded')) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      extra += provider.requests.filter((request) => stepOf(request.body).task === task).length - (STEPS + 1);
    }
  } finally {
    await stopGatewayProcess(gw);
    await provider.close();
  }
  return extra;
}

export async function stepsSection(lines: string[], { quick }: SectionOptions): Promise<void> {
  for (const [synchronous, thread] of [
    ['NORMAL', 'worker'],
    ['FULL', 'worker'],
    ['NORMAL', 'main'],
  ] as const) {
    const cost = await stepCommitCost(synchronous, thread, quick ? 30 : 200, quick ? 3 : 5);
    lines.push(
      `a five-step run (one tool call a step, zero-latency scripted model, synchronous=${synchronous}, the store on ${thread === 'worker' ? 'its worker thread' : 'the event loop'}): ` +
        `p50 ${fmt(cost.stepsMs)} ms with durable steps, ${fmt(cost.runMs)} ms with only the run's commit; ratio ${synchronous === 'NORMAL' ? judged(cost.ratio, '<=', 1.3) : fmt(cost.ratio, 3)}`,
    );
  }
  const kills = quick ? 5 : 20;
  const steps = await killSavings('steps', kills);
  const run = await killSavings('run', kills);
  lines.push(
    `${kills} five-step runs on a fake OpenAI-compatible server, each SIGKILLed once at a random point: model calls beyond one per step ${steps} with durable steps ` +
      `(at most one a kill: ${steps <= kills ? 'yes' : 'no'}), ${run} with only the run's commit`,
  );
}
