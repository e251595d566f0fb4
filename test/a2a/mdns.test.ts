/**
 * A2A on the LAN: the gateway advertises each exposed agent over DNS-SD (`_a2a._tcp`, and `_pi-a2a._tcp` for Pi's
 * peers), a browse finds them and reads their cards through the guarded client, a goodbye takes them off the air, and
 * `switchboard a2a add` configures one as a remote agent. Multicast goes over an in-process bus (mdns-bus.ts): this
 * host's loopback carries no multicast.
 */
import { readFileSync } from 'node:fs';
import { afterEach, expect, it } from 'vitest';
import { discoverPeers } from '../../src/a2a/discovery.js';
import type { A2AServer } from '../../src/a2a/server.js';
import { parseConfigText } from '../../src/config/load.js';
import { serveA2AFront, type A2AFront } from '../helpers/a2a-front.js';
import { MdnsBus } from '../helpers/mdns-bus.js';
import { cliWith, tempConfig } from '../helpers/process.js';

const CONFIG = `{
  a2a: { server: { enabled: true, agents: ["support", "billing"], mdns: { pi: true }, peers: [{ id: "p", token: "peer-token-0123456789" }] } },
  agents: { list: [
    { id: "support", model: "scripted/s", a2a: { skills: [{ id: "faq", name: "FAQ", description: "answers questions" }] } },
    { id: "billing", model: "scripted/s" },
    { id: "private", model: "scripted/s" },
  ] },
  models: { providers: { scripted: { type: "scripted", models: { s: { rules: [{ reply: "ok" }] } } } } },
}`;

let served: A2AFront | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

/** The A2A front, and the front whose agents the tests advertise. */
async function serve(): Promise<{ url: string; front: A2AServer }> {
  served = await serveA2AFront(CONFIG);
  return served;
}

const MINIMAL = `agents: { list: [{ id: "me", model: "scripted/s" }] }, models: { providers: { scripted: { type: "scripted", models: { s: { rules: [{ reply: "ok" }] } } } } }`;
// A browse that must find every service listens for 3 s: under a loaded CI run an answer came after 1 s once.
const browser = (extra = '', seconds = 1) =>
  parseConfigText(`{ ${MINIMAL}, a2a: { discovery: { mdns: true, seconds: ${seconds} }${extra} } }`, '/test/browser.json5', {}).config;

it('each exposed agent is advertised on _a2a._tcp and _pi-a2a._tcp with its card URL; a browse reads each card; after stop a browse finds none', async () => {
  const { url, front } = await serve();
  const bus = new MdnsBus();
  const warnings: string[] = [];
  const advertised = await front.advertise(url, (warning) => warnings.push(warning), { socket: bus.socket(), multicast: false });
  expect(warnings).toEqual([
    `a2a.server.mdns advertises the cards at ${url}, a loopback address no other machine can reach: set a2a.server.publicUrl to the LAN address (and gateway.host to listen on it)`,
  ]);
  expect(advertised.names).toHaveLength(4);

  const found = await discoverPeers(browser(', client: { allowPrivateTargets: true }', 3), { socket: bus.socket(), multicast: false });
  const port = Number(new URL(url).port);
  expect(found.map((peer) => [peer.service, peer.cardUrl, peer.version, peer.card?.name, peer.card?.skills])).toEqual(
    expect.arrayContaining([
      ['_a2a._tcp', `${url}/a2a/support/.well-known/agent-card.json`, '1.0', 'support', ['faq']],
      ['_pi-a2a._tcp', `${url}/a2a/support/.well-known/agent-card.json`, '1.0', 'support', ['faq']],
      ['_a2a._tcp', `${url}/a2a/billing/.well-known/agent-card.json`, '1.0', 'billing', []],
      ['_pi-a2a._tcp', `${url}/a2a/billing/.well-known/agent-card.json`, '1.0', 'billing', []],
    ]),
  );
  expect(found).toHaveLength(4);
  expect(found.every((peer) => peer.port === port && peer.error === undefined)).toBe(true);

  await advertised.stop();
  expect(await discoverPeers(browser(), { socket: bus.socket(), multicast: false })).toEqual([]);
});

it('a peer found on the LAN is read through the guarded client: on a private address only with a2a.client.allowPrivateTargets; discovery is off by default', async () => {
  const { url, front } = await serve();
  const bus = new MdnsBus();
  const advertised = await front.advertise(url, () => {}, { socket: bus.socket(), multicast: false });
  try {
    const found = await discoverPeers(browser('', 3), { socket: bus.socket(), multicast: false });
    expect(found).toHaveLength(4);
    for (const peer of found) {
      expect(peer.card).toBeUndefined();
      expect(peer.error).toContain('a2a.client.allowPrivateTargets');
    }
    const off = parseConfigText(`{ ${MINIMAL} }`, '/test/off.json5', {}).config;
    await expect(discoverPeers(off)).rejects.toThrow(
      'LAN discovery is off: set a2a.discovery.mdns: true in the config to browse for A2A peers',
    );
  } finally {
    await advertised.stop();
  }
});

it('switchboard a2a add reads the card and configures the agent under a2a.remoteAgents, once; a URL that is not one is refused', async () => {
  const { url } = await serve();
  const { configPath } = tempConfig(`// my gateway
{
  agents: { list: [{ id: "me", model: "scripted/s" }] },
  models: { providers: { scripted: { type: "scripted", models: { s: { rules: [{ reply: "ok" }] } } } } },
}
`);
  const cli = cliWith(configPath);
  const added = await cli('a2a', 'add', `${url}/a2a/support/`);
  expect(added).toMatchObject({ code: 0, stderr: '' });
  expect(added.stdout).toContain(`added remote agent "support" (support) at ${url}/a2a/support/`);
  const text = readFileSync(configPath, 'utf8');
  expect(text.startsWith('// my gateway\n')).toBe(true);
  expect(parseConfigText(text, configPath, {}).config.a2a.remoteAgents).toEqual([{ id: 'support', url: `${url}/a2a/support/` }]);

  expect(await cli('a2a', 'add', `${url}/a2a/support/`)).toEqual({
    code: 1,
    stdout: '',
    stderr: `switchboard: a2a.remoteAgents already has "support" at ${url}/a2a/support/ in ${configPath}; pick another --id, or edit that entry\n`,
  });
  expect((await cli('a2a', 'add', `${url}/a2a/billing/.well-known/agent-card.json`, '--id', 'bills')).code).toBe(0);
  expect(parseConfigText(readFileSync(configPath, 'utf8'), configPath, {}).config.a2a.remoteAgents.map((remote) => remote.id)).toEqual([
    'support',
    'bills',
  ]);
  expect(await cli('a2a', 'add', 'not a url')).toEqual({
    code: 1,
    stdout: '',
    stderr: `switchboard: "not a url" is not a URL; give the agent's http(s) URL or its card's\n`,
  });
  expect((await cli('a2a', 'add', `${url}/a2a/nobody/`)).stderr).toBe(
    `switchboard: ${url}/a2a/nobody/.well-known/agent-card.json answered 404, not an Agent Card\n`,
  );
});

it('an agent that says goodbye while a browse listens is not in what the browse finds', async () => {
  const { url, front } = await serve();
  const bus = new MdnsBus();
  const advertised = await front.advertise(url, () => {}, { socket: bus.socket(), multicast: false });
  const browsing = discoverPeers(browser('', 3), { socket: bus.socket(), multicast: false });
  // Seen first: the answer to the browse's query has come (after the advertiser's probe).
  await new Promise((resolve) => setTimeout(resolve, 1500));
  await advertised.stop();
  expect(await browsing).toEqual([]);
});
