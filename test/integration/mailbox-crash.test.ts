/**
 * Two outside processes (plain node scripts, writing in place as pi-messenger does, reusing each other's message ids)
 * write 10,000 messages into an agent's inbox while the gateway is SIGKILLed again and again. Afterwards each message
 * is an input exactly once, each committed run's reply is in its sender's inbox exactly once, and `.processing/` is
 * empty.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';

const PER_WRITER = 5000;
const WRITERS = ['Alpha', 'Beta'];
const { dir, configPath } = tempConfig(`{
  recovery: { retryInterrupted: 10 },
  mailbox: { enabled: true, dir: "mailbox", scanIntervalMs: 200 },
  agents: { list: [{ id: "ops", model: "scripted/m", mailbox: { name: "Ops" } }] },
  models: { providers: { scripted: { type: "scripted", models: { m: { rules: [{ reply: "re: {{input}}" }] } } } } },
}`);
const mailbox = join(dir, 'mailbox');
const inbox = (name: string) => join(mailbox, 'inbox', name);
const jsonFiles = (path: string) =>
  existsSync(path) ? readdirSync(path).filter((file) => file.endsWith('.json') && !file.startsWith('.')) : [];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A writer: its own inbox folder (so replies reach it), then its messages, each written in place with writeFileSync. */
const WRITER = `
const fs = require('node:fs'), path = require('node:path');
const [dir, name, count] = [process.argv[1], process.argv[2], Number(process.argv[3])];
fs.mkdirSync(path.join(dir, 'inbox', name), { recursive: true });
fs.mkdirSync(path.join(dir, 'inbox', 'Ops'), { recursive: true });
for (let i = 0; i < count; i++) {
  const message = { id: 'm-' + i, from: name, to: 'Ops', text: name + ' ' + i, timestamp: new Date().toISOString(), replyTo: null };
  const file = path.join(dir, 'inbox', 'Ops', Date.now() + '-' + Math.random().toString(36).slice(2, 8) + '.json');
  fs.writeFileSync(file, JSON.stringify(message, null, 2));
  // Paced to last some seconds, so that the kills land while messages arrive.
  if (i % 50 === 49) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60);
}`;

describe('mailbox crash', () => {
  it('SIGKILL while 10,000 messages arrive: each an input once, each reply once, nothing left in .processing', async () => {
    mkdirSync(mailbox, { recursive: true });
    let gw: GatewayProcess = await startGatewayProcess(configPath);
    const writers = WRITERS.map((name) => spawn(process.execPath, ['-e', WRITER, mailbox, name, String(PER_WRITER)], { stdio: 'inherit' }));
    const written = Promise.all(writers.map((writer) => once(writer, 'exit')));
    let writing = true;
    void written.then(() => (writing = false));
    // Kills that land while messages arrive or wait to be taken: at least three.
    let busyKills = 0;
    for (let kill = 0; kill < 12 && (busyKills < 3 || writing); kill++) {
      await sleep(300 + Math.floor(Math.random() * 500));
      if (writing || jsonFiles(inbox('Ops')).length + jsonFiles(join(inbox('Ops'), '.processing')).length > 0) busyKills += 1;
      await stopGatewayProcess(gw, 'SIGKILL');
      gw = await startGatewayProcess(configPath);
    }
    expect(busyKills).toBeGreaterThanOrEqual(3);
    expect((await written).map(([code]) => code)).toEqual([0, 0]);
    // Drained: nothing waiting in the inbox, and the replies stop growing.
    let replies = -1;
    for (;;) {
      await sleep(1000);
      const now = WRITERS.reduce((sum, name) => sum + jsonFiles(inbox(name)).length, 0);
      if (jsonFiles(inbox('Ops')).length === 0 && jsonFiles(join(inbox('Ops'), '.processing')).length === 0 && now === replies) break;
      replies = now;
    }
    expect(await stopGatewayProcess(gw)).toBe(0);
    expect(readdirSync(join(inbox('Ops'), '.processing'))).toEqual([]);
    expect(readdirSync(join(inbox('Ops'), '.rejected'))).toEqual([]);

    const store = await SqliteStore.open({ path: join(dir, '.switchboard', 'switchboard.db') });
    try {
      for (const name of WRITERS) {
        const sessionKey = `agent:ops:mailbox:direct:${name}`;
        const inputs = await store.inputs.list({ sessionKey, limit: 100_000 });
        const ids = inputs.map((input) => input.provenance.messageId);
        expect(new Set(ids).size).toBe(PER_WRITER);
        expect(inputs).toHaveLength(PER_WRITER);
        expect(inputs.every((input) => input.status === 'consumed')).toBe(true);
        // One reply per committed run, none twice; each answers a message of this writer.
        const runs = (await store.runs.list({ sessionKey, status: 'succeeded', limit: 100_000 })).map((run) => run.id);
        const files = jsonFiles(inbox(name)).map((file) => JSON.parse(readFileSync(join(inbox(name), file), 'utf8')));
        expect(files).toHaveLength(runs.length);
        expect(new Set(files.map((reply) => reply.id)).size).toBe(files.length);
        for (const reply of files) expect(reply).toMatchObject({ from: 'Ops', to: name, replyTo: expect.stringMatching(/^m-\d+$/) });
      }
      expect(await store.outbox.list({ status: 'pending' })).toEqual([]);
      expect(await store.outbox.list({ status: 'dead' })).toEqual([]);
    } finally {
      await store.close();
    }
  }, 600_000);
});
