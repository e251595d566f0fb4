/**
 * Sub-agents run by CLI agents as child processes (`sessions_spawn({ runtime: "process", agent })`, docs/runtimes.md),
 * Pi's topology: parent -> child -> parent. The task goes in as an argument or on stdin; each line the child prints is
 * journaled; the result is its last assistant message (`json-lines`), all it printed (`text`), or the file it wrote at
 * $SWITCHBOARD_RESULT_FILE (`resultFrom: "file"`). The same lane, kill, timeout and crash rules as ACP agents.
 */
import { mkdtemp, readFile, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { ExternalRunRequest, ExternalRuntime } from '../ports/runtimes.js';
import type { ExecutedRun } from '../ports/runtimes.js';
import { RuntimeChild } from './child-process.js';
import type { RuntimeDeps } from './acp-runtime.js';
import { JsonLineReader } from './json-lines.js';
import { RunRecorder } from './run-recorder.js';
import { executedRun, supervise, unfinished } from './supervise.js';

const MAX_RESULT_BYTES = 1024 * 1024;

export class ProcessRuntime implements ExternalRuntime {
  constructor(private readonly deps: RuntimeDeps) {}

  async run(request: ExternalRunRequest): Promise<ExecutedRun> {
    const recorder = new RunRecorder(request);
    const config = this.deps.config();
    const runtime = config.runtimes[request.name];
    if (!runtime) {
      const message = `runtimes has no "${request.name}" any more (the config changed since the spawn)`;
      return executedRun(recorder, request, { status: 'failed', error: { code: 'RUNTIME_UNAVAILABLE', message } });
    }
    const root = await realpath(request.workdir);
    const resultDir = await mkdtemp(join(tmpdir(), 'switchboard-result-'));
    const resultFile = join(resultDir, 'result');
    const placed = runtime.args.some((arg) => arg.includes('{task}'));
    const args =
      runtime.taskVia === 'stdin'
        ? runtime.args
        : placed
          ? runtime.args.map((arg) => arg.replaceAll('{task}', request.prompt))
          : [...runtime.args, request.prompt];
    const child = new RuntimeChild(
      {
        command: runtime.command,
        args,
        env: { ...runtime.env, SWITCHBOARD_RESULT_FILE: resultFile, SWITCHBOARD_RUN_ID: request.runId },
        cwd: runtime.cwd ? resolve(root, runtime.cwd) : root,
      },
      this.deps.records,
      request.runId,
    );
    if (runtime.taskVia === 'stdin') child.process.stdin?.end(request.prompt);
    else child.process.stdin?.end();
    recorder.note({ kind: 'process', agent: request.name, pid: child.pid ?? null });
    const reader = runtime.output === 'json-lines' ? new JsonLineReader(recorder) : undefined;
    const lines = createInterface({ input: child.process.stdout!, crlfDelay: Infinity });
    // The work is the child's output read to its end, and its exit.
    const work = (async () => {
      for await (const line of lines) {
        if (reader) reader.line(line);
        else recorder.text(`${line}\n`);
      }
      return child.exited;
    })();
    try {
      const outcome = await supervise({ child, work, signal: request.signal, graceMs: config.acp.cancelGraceMs });
      lines.close();
      await recorder.settled();
      const what = `process runtime "${request.name}"`;
      // The work is the output read to its end and the exit; an exit seen first (its pipe still draining) is the same.
      if (outcome.kind !== 'done' && outcome.kind !== 'exited')
        return executedRun(recorder, request, unfinished(outcome, child, request, what));
      const exit = outcome.kind === 'done' ? outcome.value : outcome.exit;
      if (exit.code !== 0) return executedRun(recorder, request, unfinished({ kind: 'exited', exit }, child, request, what));
      if (reader?.verdict.failure)
        return executedRun(recorder, request, { status: 'failed', error: { code: 'RUNTIME_FAILED', message: reader.verdict.failure } });
      if (runtime.resultFrom === 'file') {
        const text = await readFile(resultFile, 'utf8').catch(() => undefined);
        if (text === undefined) {
          const message = `process runtime "${request.name}" exited 0 but wrote no result file ($SWITCHBOARD_RESULT_FILE; runtimes.${request.name}.resultFrom is "file")`;
          return executedRun(recorder, request, { status: 'failed', error: { code: 'RUNTIME_FAILED', message } });
        }
        recorder.resultIs(text.length > MAX_RESULT_BYTES ? text.slice(0, MAX_RESULT_BYTES) : text);
      } else if (reader?.verdict.result !== undefined && recorder.lastMessage() === null) {
        recorder.resultIs(reader.verdict.result);
      }
      await recorder.settled();
      return executedRun(recorder, request, { status: 'succeeded' });
    } finally {
      await rm(resultDir, { recursive: true, force: true });
    }
  }
}
