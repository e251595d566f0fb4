/**
 * Channels (docs/console.md, docs/channels.md): each chat account's connection (its state, the last message and who
 * sent it, what it received, refused and sent since the gateway started, its last error), and the senders waiting with
 * a pairing code, each let in with a button. Read every few seconds while the tab is shown: a channel's connection,
 * its refusals and its pairings are not journaled (only the inputs it takes are), so the event stream would not say
 * when most of what the page shows changed.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, duration, enc, time } from '../api.js';
import { html } from '../html.js';
import { useNow } from '../live.js';

/**
 * `GET /v1/channels`: an account as `ChannelAccountStatus` of src/channels/front.ts declares it, and `GET
 * /v1/channels/senders`: a sender as `ChatSenderRecord` of src/ports/channels.ts declares it. Written out here because
 * those files use node's types (node:crypto, Buffer), which the console's type check (no node types) cannot read.
 */
interface ChannelAccountStatus {
  channel: string;
  account: string;
  state: 'connecting' | 'connected' | 'stopped' | 'error';
  /** The last connection or send error, with when it happened. */
  error: string | null;
  errorAt: number | null;
  connectedAt: number | null;
  lastMessageAt: number | null;
  lastMessageFrom: string | null;
  /** Since this gateway started: messages taken as inputs, refused, and reply parts sent. */
  received: number;
  refused: number;
  sent: number;
}

interface ChatSenderRecord {
  channel: string;
  account: string;
  senderId: string;
  name: string | null;
  status: 'pending' | 'allowed' | 'refused' | 'revoked';
  /** The pairing code while pending. */
  code: string | null;
  createdAt: number;
  updatedAt: number;
}

interface ChannelsAnswer {
  accounts: ChannelAccountStatus[];
}

interface SendersAnswer {
  senders: ChatSenderRecord[];
}

/** `POST /v1/channels/<channel>/pair`. */
interface PairAnswer {
  sender: ChatSenderRecord;
}

const READ_EVERY_MS = 3000;
/** The most waiting senders the page reads. */
const SENDERS_LIMIT = 200;

/** A marker beside the state's word, so that an account in error stands out without its colour too. */
const MARKS: Record<ChannelAccountStatus['state'], string> = { connected: '●', connecting: '◌', stopped: '○', error: '⚠' };

const ago = (at: number, now: number) => `${duration(Math.max(0, now - at))} ago`;
const who = (sender: ChatSenderRecord) => (sender.name ? `${sender.name} (${sender.senderId})` : sender.senderId);

function LastMessage({ account, now }: { account: ChannelAccountStatus; now: number }) {
  if (account.lastMessageAt === null) return html`<span class="muted">none yet</span>`;
  return html`<span title=${time(account.lastMessageAt)}>${ago(account.lastMessageAt, now)}</span>${account.lastMessageFrom && ` from ${account.lastMessageFrom}`}`;
}

function LastError({ account, now }: { account: ChannelAccountStatus; now: number }) {
  if (!account.error) return html`<span class="muted">none</span>`;
  return html`<span class="error">${account.error}</span>${account.errorAt !== null && html` <span class="muted" title=${time(account.errorAt)}>(${ago(account.errorAt, now)})</span>`}`;
}

export function ChannelsPage() {
  const [accounts, setAccounts] = useState<ChannelAccountStatus[] | null>(null);
  const [senders, setSenders] = useState<ChatSenderRecord[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  // Bumped after a pairing: the page reads again at once, and then on its period.
  const [reads, setReads] = useState(0);
  const now = useNow();
  useEffect(() => {
    let current = true;
    let reading = false;
    const read = async () => {
      if (reading || document.hidden) return;
      reading = true;
      try {
        const [channels, waiting] = await Promise.all([
          api<ChannelsAnswer>('/v1/channels'),
          api<SendersAnswer>(`/v1/channels/senders?status=pending&limit=${SENDERS_LIMIT}`),
        ]);
        if (!current) return;
        setAccounts(channels.accounts);
        setSenders(waiting.senders);
        setError(null);
      } catch (failure) {
        if (current) setError((failure as Error).message);
      } finally {
        reading = false;
      }
    };
    void read();
    const timer = setInterval(read, READ_EVERY_MS);
    return () => {
      current = false;
      clearInterval(timer);
    };
  }, [reads]);

  const letIn = async (sender: ChatSenderRecord) => {
    const key = `${sender.channel}/${sender.account}/${sender.senderId}`;
    setBusy(key);
    try {
      const { sender: paired } = await api<PairAnswer>(`/v1/channels/${enc(sender.channel)}/pair`, {
        method: 'POST',
        body: { code: sender.code },
      });
      setOutcome({
        ok: true,
        text: `Let in ${who(paired)} on ${paired.channel} / ${paired.account}: what they send from now on reaches the agents.`,
      });
    } catch (failure) {
      // Paired already (by the CLI, or in another tab): the code is used once.
      setOutcome({ ok: false, text: (failure as Error).message });
    } finally {
      setBusy(null);
      setReads((count) => count + 1);
    }
  };

  if (error && !accounts) return html`<p class="error">${error}</p>`;
  if (!accounts) return html`<p>Loading…</p>`;
  return html`
    <h1>Channels</h1>
    ${error && html`<p class="error">${error}</p>`}
    ${
      accounts.length === 0
        ? html`<p data-testid="no-channels">No chat account is configured. Add one under <code>${'channels.<telegram|slack|discord|webhook>.accounts'}</code> in the config, with who may talk under <code>${'channels.<channel>.access'}</code>, and restart the gateway: accounts are read when it starts (docs/channels.md).</p>`
        : html`<table class="channels">
            <thead><tr><th>channel</th><th>account</th><th>state</th><th>last message</th><th>received</th><th>refused</th><th>sent</th><th>last error</th></tr></thead>
            <tbody>${accounts.map(
              (account) => html`<tr data-testid="channel-account" class=${account.state === 'error' ? 'account-error' : ''}>
                <td data-testid="account-channel">${account.channel}</td>
                <td data-testid="account-name"><b>${account.account}</b></td>
                <td><span data-testid="account-state" class=${`state ${account.state}`} title=${account.connectedAt ? `connected ${time(account.connectedAt)}` : ''}><span aria-hidden="true">${MARKS[account.state]}</span> ${account.state}</span></td>
                <td data-testid="account-last"><${LastMessage} account=${account} now=${now} /></td>
                <td data-testid="account-received">${account.received}</td>
                <td data-testid="account-refused">${account.refused}</td>
                <td data-testid="account-sent">${account.sent}</td>
                <td data-testid="account-error"><${LastError} account=${account} now=${now} /></td>
              </tr>`,
            )}</tbody>
          </table>
          <p class="muted">Received, refused and sent (reply parts) count since this gateway started.</p>`
    }
    <h2>Waiting to be let in</h2>
    ${outcome && html`<p class=${outcome.ok ? '' : 'error'} data-testid="pair-outcome">${outcome.text}</p>`}
    ${
      senders.length === 0
        ? html`<p class="muted" data-testid="no-senders">No sender waits. With <code>access.direct: "pairing"</code> (the default), someone not let in who writes to an account is sent a pairing code once, and waits here until let in.</p>`
        : html`<table class="senders">
            <thead><tr><th>channel</th><th>account</th><th>sender</th><th>pairing code</th><th>waiting since</th><th></th></tr></thead>
            <tbody>${senders.map((sender) => {
              const key = `${sender.channel}/${sender.account}/${sender.senderId}`;
              return html`<tr data-testid="pending-sender" class="pending">
                <td>${sender.channel}</td>
                <td>${sender.account}</td>
                <td data-testid="sender-name">${who(sender)}</td>
                <td><code data-testid="sender-code">${sender.code}</code></td>
                <td title=${time(sender.createdAt)}>${ago(sender.createdAt, now)}</td>
                <td><button type="button" class="active" disabled=${busy === key || !sender.code} onClick=${() => letIn(sender)}>Let in</button></td>
              </tr>`;
            })}</tbody>
          </table>
          <p class="muted">The same from a shell: <code>${'switchboard channels pair <channel> <code>'}</code>.${senders.length === SENDERS_LIMIT ? ` The newest ${SENDERS_LIMIT} are shown; switchboard channels senders --status pending --limit reads more.` : ''}</p>`
    }
  `;
}
