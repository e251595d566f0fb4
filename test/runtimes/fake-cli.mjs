// A small CLI agent for the process runtime tests: it prints pi-style JSON lines (`--mode json`) for the task it is
// given as its last argument (or on stdin with --stdin). "crash" exits 2 with stderr lines, "stubborn" ignores
// SIGTERM and starts a grandchild (and a "daemon" that calls setsid, leaving the process group), "file" writes its result to $SWITCHBOARD_RESULT_FILE, "text" prints plain text,
// "show-env" prints the names of its environment variables, one a line.
import { spawn } from 'node:child_process';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const task = process.argv.includes('--stdin') ? readFileSync(0, 'utf8') : process.argv.at(-1);
const pids = process.env.FAKE_PIDS_DIR;
if (pids) appendFileSync(join(pids, 'pids'), `agent ${process.pid}\n`);
const line = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);

if (task.includes('show-env')) {
  process.stdout.write(`${Object.keys(process.env).sort().join('\n')}\n`);
  process.exit(0);
}
if (task.includes('text')) {
  process.stdout.write(`plain output for ${task}\nsecond line\n`);
  process.exit(0);
}
line({ type: 'session', id: 'fake-session', cwd: process.cwd() });
line({ type: 'agent_start' });
line({ type: 'message_update', assistantMessageEvent: { type: 'text_delta', delta: 'Looking' } });
line({ type: 'message_end', message: { role: 'assistant', content: [{ type: 'text', text: 'Looking' }] } });
line({ type: 'tool_execution_start', toolCallId: 't1', toolName: 'bash', args: { command: 'ls' } });
line({
  type: 'tool_execution_end',
  toolCallId: 't1',
  toolName: 'bash',
  result: { content: [{ type: 'text', text: 'a.txt' }] },
  isError: false,
});
if (task.includes('crash')) {
  process.stderr.write('panic: the fake cli crashed\n');
  process.exit(2);
}
if (task.includes('stubborn')) {
  const grandchild = spawn('sleep', ['1000'], { stdio: 'ignore' });
  if (pids) appendFileSync(join(pids, 'pids'), `grandchild ${grandchild.pid}\n`);
  // detached: setsid, as a daemonizing tool does.
  const daemon = spawn('sleep', ['1000'], { stdio: 'ignore', detached: true });
  if (pids) appendFileSync(join(pids, 'pids'), `daemon ${daemon.pid}\n`);
  process.on('SIGTERM', () => {});
  setInterval(() => {}, 1000);
} else {
  if (task.includes('file')) writeFileSync(process.env.SWITCHBOARD_RESULT_FILE, `result from the file for: ${task}`);
  line({ type: 'message_end', message: { role: 'assistant', content: [{ type: 'text', text: `Finished: ${task}` }] } });
  line({ type: 'agent_end', messages: [] });
}
