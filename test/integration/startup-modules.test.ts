/**
 * What a gateway process loads at startup: the A2A server's stack (express and the SDK's server) only
 * when the A2A server is on, and undici only with the first guarded outbound call. Loading them is about
 * a fifth of the cold start (BENCHMARKS.md, Cold start), so a static import of them creeping back is a
 * regression. express and undici are CommonJS, so a loaded one shows in require.cache.
 */
import { describe, expect, it } from 'vitest';
import { ROOT, startGatewayProcess, stopGatewayProcess, tempConfig } from '../helpers/process.js';

/** Printed to stderr as the process exits: which of these packages it had loaded. */
const REPORT = `data:text/javascript,${encodeURIComponent(`
import { createRequire } from 'node:module';
const cache = createRequire(${JSON.stringify(`${ROOT}/package.json`)}).cache;
process.on('exit', () => {
  const loaded = ['express', 'undici'].filter((name) => Object.keys(cache).some((path) => path.includes('/node_modules/' + name + '/')));
  process.stderr.write('LOADED ' + JSON.stringify(loaded) + '\\n');
});`)}`;

async function loadedAtStartup(config: string): Promise<string[]> {
  const gateway = await startGatewayProcess(tempConfig(config).configPath, { NODE_OPTIONS: `--import ${REPORT}` });
  await stopGatewayProcess(gateway);
  const line = gateway
    .stderr()
    .split('\n')
    .find((text) => text.startsWith('LOADED '));
  expect(line, gateway.stderr()).toBeDefined();
  return JSON.parse(line!.slice('LOADED '.length)) as string[];
}

const AGENTS = `agents: { list: [{ id: "echo", model: "scripted/echo" }] }, models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo" }] } } } } }`;

describe('startup', () => {
  it('loads neither the A2A server stack nor undici when the A2A server is off', async () => {
    expect(await loadedAtStartup(`{ ${AGENTS} }`)).toEqual([]);
  });

  it('loads the A2A server stack when the A2A server is on', async () => {
    expect(await loadedAtStartup(`{ ${AGENTS}, a2a: { server: { enabled: true, requireAuth: false } } }`)).toContain('express');
  });
});
