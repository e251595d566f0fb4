/** `channels` in the config (docs/channels.md): defaults, the secrets each mode needs, and what a reload applies. */
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { configProblems } from '../helpers/config-problems.js';
import { planReload } from '../../src/config/reload.js';

const configWith = (channels: string) =>
  `{ agents: { list: [{ id: "ops", model: "scripted/ops" }] }, models: { providers: { scripted: { type: "scripted", models: { ops: { rules: [{ reply: "x" }] } } } } }, channels: ${channels} }`;

const problemsOf = (channels: string) => configProblems(configWith(channels));

describe('channels config', () => {
  it('fills the defaults: pairing for direct chats, listed groups only, mentions required, 10 MB files, typing, polling', () => {
    const { config } = parseConfigText(configWith('{ telegram: { accounts: { main: { token: "1:x" } } } }'), '/etc/sb.json5', {});
    expect(config.channels.telegram).toEqual({
      access: { direct: 'pairing', users: [], group: 'allowlist', groups: [], requireMention: true },
      maxAttachmentBytes: 10 * 1024 * 1024,
      typing: true,
      accounts: { main: { token: '1:x', mode: 'polling', apiRoot: 'https://api.telegram.org' } },
    });
    expect(config.channels.slack).toBeUndefined();
  });

  it('names the secret each mode needs, and a bad account name', () => {
    expect(
      problemsOf(`{
        slack: { accounts: { a: { botToken: "xoxb" }, b: { botToken: "xoxb", mode: "events" } } },
        telegram: { accounts: { t: { token: "1:x", mode: "webhook" }, "bad name": { token: "1:secret-value" } } },
      }`),
    ).toEqual([
      'channels.telegram.accounts.bad name: an account name is 1-64 letters, digits, _ or -',
      'channels.slack.accounts.a.appToken: required with mode "socket" (an app-level token, xapp-..., with connections:write)',
      'channels.slack.accounts.b.signingSecret: required with mode "events" (the app\'s Signing Secret, under Basic Information)',
      'channels.telegram.accounts.t.webhookSecret: required with mode "webhook" (give the same secret_token to setWebhook), or anyone could post updates',
    ]);
  });

  it('applies access on reload and names changed accounts as waiting for a restart', () => {
    const before = parseConfigText(configWith('{ telegram: { accounts: { main: { token: "1:x" } } } }'), '/etc/sb.json5', {}).config;
    const access = parseConfigText(
      configWith('{ telegram: { access: { users: ["42"] }, accounts: { main: { token: "1:x" } } } }'),
      '/etc/sb.json5',
      {},
    ).config;
    expect(planReload(before, access)).toEqual({ applied: ['channels'], restartRequired: [] });
    const account = parseConfigText(configWith('{ telegram: { accounts: { main: { token: "1:y" } } } }'), '/etc/sb.json5', {}).config;
    expect(planReload(before, account)).toEqual({ applied: ['channels'], restartRequired: ['channels.telegram.accounts'] });
  });
});
