// An outside board worker, as a user would write one: claim, work a little, complete; on a refused claim
// move on; when the gateway is unreachable, read its address again and retry. Used by the board crash test.
// Usage: node board-worker.mjs <dataDir> <workerName> <logFile> <doneFile>
// Appends "<taskId> <token> completed|lost" per answered complete to <logFile>; exits once <doneFile>
// exists and nothing is left to claim.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const [dataDir, worker, logFile, doneFile] = process.argv.slice(2);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function target() {
  const { url } = JSON.parse(readFileSync(join(dataDir, 'gateway.json'), 'utf8'));
  return { url, token: readFileSync(join(dataDir, 'token'), 'utf8').trim() };
}

async function call(path, body) {
  const { url, token } = target();
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

for (;;) {
  try {
    const claimed = await call('/v1/board/claim', { worker, ttlSeconds: 2 });
    if (claimed.status !== 200) throw new Error(`claim answered ${claimed.status}: ${JSON.stringify(claimed.body)}`);
    const { claim } = claimed.body;
    if (!claim) {
      if (existsSync(doneFile)) process.exit(0);
      await sleep(20);
      continue;
    }
    await sleep(Math.random() * 15);
    if (Math.random() < 0.2) await call(`/v1/board/tasks/${claim.taskId}/heartbeat`, { token: claim.token, ttlSeconds: 2 });
    const done = await call(`/v1/board/tasks/${claim.taskId}/complete`, { token: claim.token, result: `done by ${worker}` });
    if (done.status === 200) appendFileSync(logFile, `${claim.taskId} ${claim.token} completed\n`);
    else if (done.body?.error?.code === 'CLAIM_LOST') appendFileSync(logFile, `${claim.taskId} ${claim.token} lost\n`);
    else throw new Error(`complete answered ${done.status}: ${JSON.stringify(done.body)}`);
  } catch {
    // The gateway is down or restarting: try again, at its new address.
    await sleep(100);
  }
}
