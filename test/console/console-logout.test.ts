/**
 * The console's "Log out" against a real gateway process (docs/console.md, "Logging in"): it ends the login for good
 * (a copy of the cookie is refused afterwards, also after a restart), and, like every change made with the cookie, it
 * needs the console's header, so that a page on another origin cannot log anyone out.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { type GatewayProcess, startGatewayProcess, stopGatewayProcess, tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const { configPath } = tempConfig(`{
  agents: { list: [{ id: "solo", model: "scripted/solo" }] },
  models: { providers: { scripted: { type: "scripted", models: { solo: { rules: [{ reply: "ok" }] } } } } },
}`);

let gateway: GatewayProcess | undefined;
afterAll(async () => {
  if (gateway) await stopGatewayProcess(gateway);
});

async function logIn(url: string, token: string): Promise<string> {
  const answer = await fetch(`${url}/login`, { method: 'POST', body: JSON.stringify({ token }) });
  expect(answer.status).toBe(200);
  return answer.headers.get('set-cookie')!.split(';')[0];
}

const statusWith = async (url: string, cookie: string) => (await fetch(`${url}/v1/status`, { headers: { cookie } })).status;

/** An SSE stream of /v1/events opened with a cookie: its text so far, and whether it has ended. */
async function openStream(url: string, cookie: string) {
  const answer = await fetch(`${url}/v1/events`, { headers: { cookie } });
  expect(answer.status).toBe(200);
  const reader = answer.body!.getReader();
  const state = { text: '', ended: false };
  void (async () => {
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) break;
      state.text += new TextDecoder().decode(value);
    }
    state.ended = true;
  })();
  return { state, close: () => reader.cancel().catch(() => undefined) };
}

describe('console logout', () => {
  it("refuses a logout without the console header (another origin's form or fetch), and the login stays valid", async () => {
    gateway = await startGatewayProcess(configPath);
    const cookie = await logIn(gateway.url, gateway.token);
    expect(await statusWith(gateway.url, cookie)).toBe(200);
    for (const headers of <Record<string, string>[]>[
      { cookie },
      { cookie, origin: 'http://127.0.0.1:9999', 'content-type': 'application/x-www-form-urlencoded' },
    ]) {
      const refused = await fetch(`${gateway.url}/logout`, { method: 'POST', headers });
      expect([refused.status, refused.headers.get('set-cookie'), await refused.json()]).toEqual([
        403,
        null,
        {
          error: {
            code: 'FORBIDDEN',
            message:
              'logging out must carry the header "X-Switchboard-Console: 1" (the console\'s "Log out" button sends it); the login stays as it was',
          },
        },
      ]);
    }
    expect(await statusWith(gateway.url, cookie)).toBe(200);
  });

  it('ends the login: the same cookie is refused afterwards, also after a restart, and a new login works', async () => {
    gateway ??= await startGatewayProcess(configPath);
    const cookie = await logIn(gateway.url, gateway.token);
    const other = await logIn(gateway.url, gateway.token);
    const out = await fetch(`${gateway.url}/logout`, { method: 'POST', headers: { cookie, 'x-switchboard-console': '1' } });
    expect([out.status, out.headers.get('set-cookie'), await out.json()]).toEqual([
      200,
      'switchboard_console=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0',
      { loggedOut: true },
    ]);
    // A copy of the cookie kept by the browser (or anyone) no longer opens the API; another browser's login does.
    expect(await statusWith(gateway.url, cookie)).toBe(401);
    expect(await statusWith(gateway.url, other)).toBe(200);
    await stopGatewayProcess(gateway);
    gateway = await startGatewayProcess(configPath);
    expect(await statusWith(gateway.url, cookie)).toBe(401);
    expect(await statusWith(gateway.url, other)).toBe(200);
    expect(await statusWith(gateway.url, await logIn(gateway.url, gateway.token))).toBe(200);
  });

  it('ends the live stream a logged-out login had open, and leaves the streams of other logins', async () => {
    gateway ??= await startGatewayProcess(configPath);
    const url = gateway.url;
    const cookie = await logIn(url, gateway.token);
    const other = await logIn(url, gateway.token);
    const mine = await openStream(url, cookie);
    const theirs = await openStream(url, other);
    await waitUntil('both streams are open', async () => (mine.state.text && theirs.state.text ? true : undefined));
    await fetch(`${url}/logout`, { method: 'POST', headers: { cookie, 'x-switchboard-console': '1' } });
    await waitUntil('the logged-out stream ends', async () => (mine.state.ended ? true : undefined));
    const sent = await gateway.request<{ sessionKey: string }>('POST', '/v1/send', { target: 'solo', message: 'hi', wait: true });
    await waitUntil('the other stream still gets events', async () =>
      theirs.state.text.includes(sent.body.sessionKey) ? true : undefined,
    );
    expect(theirs.state.ended).toBe(false);
    await theirs.close();
  });
});
