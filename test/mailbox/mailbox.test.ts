/**
 * The file mailbox in one gateway: a pi-messenger peer's message becomes one input and its reply lands in the peer's
 * inbox as pi-messenger reads it; bad files end in `.rejected/` with the reason; a half-written file is taken once
 * complete; an unknown recipient is refused naming the known ones; reservations are a compare-and-set that the
 * workspace tools respect.
 */
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import type { ToolContext } from '../../src/ports/tools.js';
import type { MailboxService } from '../../src/mailbox/mailbox.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { registerPeer } from '../helpers/mailbox-files.js';
import { waitUntil } from '../helpers/wait.js';

/** The span that wrote a message, which its reader's run joins; telemetry is off, so it says nothing recorded it. */
const TRACEPARENT = expect.stringMatching(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

function setup(extra = '') {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sb-mailbox-')));
  const dir = join(root, 'mailbox');
  for (const agent of ['ops', 'dev']) mkdirSync(join(root, agent));
  const config = `{
    agents: { list: [
      { id: "ops", model: "scripted/m", workspace: "${root}/ops", mailbox: { name: "Ops" } },
      { id: "dev", model: "scripted/m", workspace: "${root}/dev" },
    ] },
    mailbox: { enabled: true, dir: "${dir}", scanIntervalMs: 100, partialGraceMs: 400 },
    ${extra}
    models: { providers: { scripted: { type: "scripted", models: { m: { rules: [
      { match: "^write ([a-z./]+)", steps: [{ toolCalls: [{ tool: "write_file", args: { path: "{{match.1}}", content: "x" } }] }, { text: "{{tool.write_file.status}} {{tool.write_file.error}}" }] },
      { reply: "got: {{input}}" },
    ] } } } } },
  }`;
  return { root, dir, config };
}

/** A peer as pi-messenger writes: its registration, its inbox, and a message file written in place. */
function piPeer(dir: string, name: string) {
  registerPeer(dir, name);
  let n = 0;
  return {
    send(to: string, text: string, id = `${name}-${++n}`) {
      const message = { id, from: name, to, text, timestamp: new Date().toISOString(), replyTo: null };
      const file = join(dir, 'inbox', to, `${Date.now()}-${Math.random().toString(36).slice(2, 8)}.json`);
      writeFileSync(file, JSON.stringify(message, null, 2));
      return { id, file };
    },
    /** The messages in its inbox, oldest first; undefined while there are none (for waitUntil). */
    received: () => {
      const entries = peerInbox();
      return entries.length ? entries : undefined;
    },
    inbox: () => peerInbox(),
  };
  function peerInbox() {
    return readdirSync(join(dir, 'inbox', name))
      .filter((file) => file.endsWith('.json') && !file.startsWith('.'))
      .sort()
      .map((file) => ({ file, message: JSON.parse(readFileSync(join(dir, 'inbox', name, file), 'utf8')) }));
  }
}

async function tool(g: Gateway, agent: string, name: string) {
  const found = (await g.toolsOf(`agent:${agent}:main`)).find((candidate) => candidate.name === name);
  if (!found) throw new Error(`${agent} is not offered ${name}`);
  return (args: Record<string, unknown>, key = `k-${Math.random()}`) =>
    found.execute(args, {
      agentId: agent,
      sessionKey: `agent:${agent}:main`,
      clock: { now: () => Date.now() },
      idempotencyKey: key,
    } as unknown as ToolContext);
}

describe('the file mailbox', () => {
  it('registers each agent, takes a pi-messenger message once, and replies into the sender inbox as pi-messenger reads it', async () => {
    const { dir, config } = setup();
    gateway = await startTestGateway(config);
    const registration = JSON.parse(readFileSync(join(dir, 'registry', 'Ops.json'), 'utf8'));
    expect(registration).toMatchObject({ name: 'Ops', pid: process.pid, isHuman: false, session: { toolCalls: 0 }, activity: {} });
    expect(existsSync(join(dir, 'registry', 'dev.json'))).toBe(true);
    const peer = piPeer(dir, 'PiPeer');
    const sent = peer.send('Ops', 'hello there');
    const [reply] = await waitUntil('the reply', () => peer.received(), 10_000);
    expect(reply.file).toMatch(/^\d{13}-[0-9a-z]{6}\.json$/);
    expect(reply.message).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      from: 'Ops',
      to: 'PiPeer',
      text: 'got: hello there',
      timestamp: expect.any(String),
      replyTo: sent.id,
      // The hop budget (docs/agent-to-agent.md): pi-messenger ignores it; another Switchboard counts it.
      switchboard: { conversation: expect.any(String), hop: 1, traceparent: TRACEPARENT },
    });
    const sessions = await gateway.listSessions({ agentId: 'ops' });
    expect(sessions.map((session) => session.key)).toContain('agent:ops:mailbox:direct:PiPeer');
    expect(readdirSync(join(dir, 'inbox', 'Ops', '.processing'))).toEqual([]);
    // The same message read again (a crash before the delete) is the same input: no second run, no second reply.
    const copy = join(dir, 'inbox', 'Ops', '.processing', 'again.json');
    const history = await gateway.history('agent:ops:mailbox:direct:PiPeer');
    writeFileSync(
      copy,
      JSON.stringify({ id: sent.id, from: 'PiPeer', to: 'Ops', text: 'hello there', timestamp: new Date().toISOString(), replyTo: null }),
    );
    await waitUntil('the copy is taken', () => !existsSync(copy), 5000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await gateway.history('agent:ops:mailbox:direct:PiPeer')).length).toBe(history.length);
    expect(peer.inbox()).toHaveLength(1);
  });

  it('files read together share one WAL sync, and none is deleted before it (synchronous FULL)', async () => {
    const { root, dir, config } = setup('messages: { queue: { byChannel: { mailbox: "notify" } } },');
    const store = await SqliteStore.open({ path: join(root, 'store.db') });
    gateway = await startTestGateway(config, {}, store);
    const wal = store.wal!;
    let syncsEnded = 0;
    const durable = wal.durable.bind(wal);
    wal.durable = () => durable().then(() => void (syncsEnded += 1));
    const processing = join(dir, 'inbox', 'Ops', '.processing');
    // Each claimed file, once gone from .processing/, with how many syncs had ended by then.
    const seen = new Set<string>();
    const deletedAfter = new Map<string, number>();
    const watcher = (await import('node:fs')).watch(processing, () => {
      const present = new Set(readdirSync(processing).filter((file) => file.endsWith('.json')));
      for (const file of present) seen.add(file);
      for (const file of seen) if (!present.has(file) && !deletedAfter.has(file)) deletedAfter.set(file, syncsEnded);
    });
    try {
      const before = wal.syncs;
      const peer = piPeer(dir, 'PiPeer');
      for (let i = 0; i < 20; i++) peer.send('Ops', `note ${i}`);
      await waitUntil('all stored', async () => {
        const inputs = await gateway!.store.inputs.list({ sessionKey: 'agent:ops:mailbox:direct:PiPeer' });
        return (inputs.length === 20 && inputs.every((input) => input.status === 'consumed')) || undefined;
      });
      await waitUntil('the files deleted', () => (seen.size === 20 && deletedAfter.size === 20) || undefined);
      // One sync for the pass (each file's own sync would be 20); the stored notes are internal writes.
      expect(wal.syncs - before).toBeLessThanOrEqual(2);
      expect([...deletedAfter.values()].every((syncs) => syncs >= 1)).toBe(true);
    } finally {
      watcher.close();
    }
  });

  it('rejects malformed, mistyped, 20 MB and symlinked files with the reason, and takes a slowly written file once complete', async () => {
    const { root, dir, config } = setup();
    gateway = await startTestGateway(config.replace('partialGraceMs: 400', 'partialGraceMs: 1500'));
    const peer = piPeer(dir, 'Slow');
    const inbox = join(dir, 'inbox', 'Ops');
    writeFileSync(join(inbox, '1-bad.json'), '{"id": "x", "from": ');
    writeFileSync(
      join(inbox, '2-types.json'),
      JSON.stringify({ id: 7, from: 'Slow', to: 'Ops', text: 'x', timestamp: 'now', replyTo: null }),
    );
    // 20 MB against the default limit of 1 MB: refused unread.
    writeFileSync(join(inbox, '3-big.json'), `{"text": "${'x'.repeat(20 * 1024 * 1024)}"}`);
    writeFileSync(join(root, 'secret.txt'), 'secret');
    symlinkSync(join(root, 'secret.txt'), join(inbox, '4-link.json'));
    writeFileSync(
      join(inbox, '5-wrongbox.json'),
      JSON.stringify({ id: 'w', from: 'Slow', to: 'dev', text: 'x', timestamp: 'now', replyTo: null }),
    );
    // Written byte by byte, in place, slower than a scan.
    const text = JSON.stringify({
      id: 'slow-1',
      from: 'Slow',
      to: 'Ops',
      text: 'slowly',
      timestamp: new Date().toISOString(),
      replyTo: null,
    });
    const fd = openSync(join(inbox, '6-slow.json'), 'w');
    for (let i = 0; i < text.length; i += 8) {
      writeSync(fd, text.slice(i, i + 8));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    closeSync(fd);
    const rejected = join(inbox, '.rejected');
    await waitUntil('five rejections', () => readdirSync(rejected).filter((file) => file.endsWith('.error')).length === 5, 10_000);
    const reason = (file: string) =>
      readFileSync(join(rejected, `${file}.error`), 'utf8')
        .replace(/^\S+ /, '')
        .trim();
    expect(reason('1-bad.json')).toMatch(/^not JSON \(.+\), and unchanged for \d+ ms \(mailbox\.partialGraceMs\)$/);
    expect(reason('2-types.json')).toBe('id: Invalid input: expected string, received number');
    expect(reason('3-big.json')).toBe(`the file is ${20 * 1024 * 1024 + 12} bytes; the limit is 1000000 (mailbox.maxFileBytes)`);
    expect(reason('4-link.json')).toBe('the file is a symlink; the mailbox reads only regular files');
    expect(reason('5-wrongbox.json')).toBe('to: the message is addressed to "dev" but sits in the inbox of "Ops"');
    const [reply] = await waitUntil('the slow one is answered', () => peer.received(), 10_000);
    expect(reply.message).toMatchObject({ text: 'got: slowly', replyTo: 'slow-1' });
    expect(readFileSync(join(root, 'secret.txt'), 'utf8')).toBe('secret');
  });

  it('a flood of 2,000 malformed files is rejected with reasons while the good messages among them are taken', async () => {
    const { dir, config } = setup();
    gateway = await startTestGateway(config);
    const peer = piPeer(dir, 'Flood');
    const inbox = join(dir, 'inbox', 'Ops');
    const bad = [
      '{',
      '[]',
      'null',
      '{"id": 1}',
      JSON.stringify({ id: 'x', from: '../etc', to: 'Ops', text: 'x', timestamp: 't', replyTo: null }),
    ];
    for (let i = 0; i < 2000; i++) writeFileSync(join(inbox, `${1000 + i}-bad.json`), bad[i % bad.length]);
    const good = [0, 1, 2].map((i) => peer.send('Ops', `good ${i}`));
    await waitUntil(
      'all rejected',
      () => readdirSync(join(inbox, '.rejected')).filter((file) => file.endsWith('.error')).length === 2000,
      30_000,
    );
    await waitUntil('the good ones answered', () => peer.inbox().length === 3, 10_000);
    expect(new Set(peer.inbox().map((entry) => entry.message.replyTo))).toEqual(new Set(good.map((sent) => sent.id)));
    const reason = (file: string) =>
      readFileSync(join(inbox, '.rejected', `${file}.error`), 'utf8')
        .replace(/^\S+ /, '')
        .trim();
    expect(reason('1000-bad.json')).toMatch(/^not JSON \(.+\), and unchanged for \d+ ms \(mailbox\.partialGraceMs\)$/);
    expect(reason('1001-bad.json')).toBe('Invalid input: expected object, received array');
    expect(reason('1002-bad.json')).toBe('Invalid input: expected object, received null');
    expect(reason('1003-bad.json')).toBe('id: Invalid input: expected string, received number');
    expect(reason('1004-bad.json')).toBe('from: expected a mailbox name (1-50 characters [A-Za-z0-9_-])');
    expect(readdirSync(join(inbox, '.processing'))).toEqual([]);
  }, 60_000);

  it('mailbox_send: once per call, to a known name only, and refused by the agent-to-agent policy between agents', async () => {
    const { dir, config } = setup('tools: { agentToAgent: { enabled: false } },');
    let mailbox!: MailboxService;
    gateway = await startTestGateway(config, {}, undefined, { onMailbox: (made) => (mailbox = made) });
    const peer = piPeer(dir, 'Reader');
    const send = await tool(gateway, 'ops', 'mailbox_send');
    const first = await send({ to: 'Reader', text: 'one' }, 'same-key');
    const again = await send({ to: 'Reader', text: 'one' }, 'same-key');
    expect(again).toEqual(first);
    await waitUntil('delivered', () => peer.inbox().length === 1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(peer.inbox().map((entry) => entry.message)).toEqual([
      {
        id: (first as { id: string }).id,
        from: 'Ops',
        to: 'Reader',
        text: 'one',
        timestamp: expect.any(String),
        replyTo: null,
        switchboard: { conversation: expect.any(String), hop: 1, traceparent: TRACEPARENT },
      },
    ]);
    expect(await send({ to: 'Nobody', text: 'x' })).toEqual({
      status: 'error',
      code: 'MAILBOX_RECIPIENT_UNKNOWN',
      error: `no one named "Nobody" in the mailbox ${dir} (known: Ops, Reader, dev); a recipient registers or has an inbox folder`,
    });
    expect(existsSync(join(dir, 'inbox', 'Nobody'))).toBe(false);
    expect(await send({ to: 'dev', text: 'x' })).toEqual({
      status: 'forbidden',
      layer: 'agentToAgent',
      error: 'agent "ops" may not message agent "dev" (tools.agentToAgent)',
    });
    // A file claiming to be from another agent meets the same policy at the door.
    writeFileSync(
      join(dir, 'inbox', 'dev', '1-forged.json'),
      JSON.stringify({ id: 'f', from: 'Ops', to: 'dev', text: 'hi', timestamp: 'now', replyTo: null }),
    );
    await mailbox.settle();
    await waitUntil('rejected', () => existsSync(join(dir, 'inbox', 'dev', '.rejected', '1-forged.json.error')));
    expect(readFileSync(join(dir, 'inbox', 'dev', '.rejected', '1-forged.json.error'), 'utf8')).toMatch(
      /refused by agentToAgent: agent "ops" \(as "Ops"\) may not message agent "dev" \(tools\.agentToAgent\)/,
    );
  });

  it('reservations: a compare-and-set, mirrored into the registration, and respected by write_file', async () => {
    const { root, dir, config } = setup('tools: { allow: ["*"] },');
    gateway = await startTestGateway(config);
    const reserve = await tool(gateway, 'ops', 'mailbox_reserve');
    expect(await reserve({ paths: ['../shared/'], reason: 'refactor' })).toMatchObject({ status: 'reserved', paths: ['../shared/'] });
    expect(JSON.parse(readFileSync(join(dir, 'registry', 'Ops.json'), 'utf8')).reservations).toEqual([
      { pattern: '../shared/', reason: 'refactor', since: expect.any(String) },
    ]);
    const devReserve = await tool(gateway, 'dev', 'mailbox_reserve');
    expect(await devReserve({ paths: ['../shared/a.ts'] })).toEqual({
      status: 'conflict',
      error: '"../shared/a.ts" overlaps "../shared/", reserved by Ops (refactor); nothing was reserved',
      holder: 'Ops',
      reason: 'refactor',
    });
    expect((await gateway.store.mailbox.reservations(Date.now())).map((held) => held.absolute)).toEqual([`${root}/shared/`]);
    // Ops reserves a folder in dev's workspace, named from its own: dev's write there is refused, on the real path.
    mkdirSync(join(root, 'dev', 'src'));
    expect(await reserve({ paths: ['../dev/src/'] })).toMatchObject({ status: 'reserved' });
    const write = async (path: string) => {
      const sent = await gateway!.send({ target: 'dev', message: `write ${path}` });
      return ((await gateway!.waitForInput(sent.input.id, 10_000)) as { reply: string }).reply;
    };
    expect(await write('src/a.ts')).toBe(
      `error "${root}/dev/src/a.ts" is reserved by Ops (../dev/src/); ask them with mailbox_send, or wait until they release it`,
    );
    expect(existsSync(join(root, 'dev', 'src', 'a.ts'))).toBe(false);
    expect(await write('other.ts')).toBe('ok ');
    // A call that meets a conflict gives back only what it took: ../shared/ was held before and stays held.
    await devReserve({ paths: ['../dev/lib/'] });
    expect(await reserve({ paths: ['../shared/', '../notes/', '../dev/lib/x.ts'] })).toMatchObject({ status: 'conflict', holder: 'dev' });
    expect((await gateway.store.mailbox.reservations(Date.now(), 'Ops')).map((held) => held.pattern)).toEqual([
      '../shared/',
      '../dev/src/',
    ]);
    await (await tool(gateway, 'dev', 'mailbox_release'))({});
    const release = await tool(gateway, 'ops', 'mailbox_release');
    expect(await release({})).toEqual({ status: 'released', paths: ['../shared/', '../dev/src/'] });
    expect(await write('src/a.ts')).toBe('ok ');
    expect(await devReserve({ paths: ['../shared/a.ts'] })).toMatchObject({ status: 'reserved' });
  });
});
