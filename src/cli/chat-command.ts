/**
 * `switchboard chat`: a conversation with an agent's main session. The reply streams in as the model
 * writes it. Ctrl-C while waiting stops waiting (the reply still comes, and is shown when it does);
 * Ctrl-C at the prompt, Ctrl-D or /exit end the chat. A reply nobody is waiting for (a sub-agent's
 * result passed on later) is printed above the prompt, which is redrawn with what was typed so far.
 */
import { createInterface, type Interface } from 'node:readline';
import { SwitchboardError, errorMessage } from '../core/errors.js';
import type { EventRecord } from '../ports/index.js';
import { displayName } from './format.js';
import { describeSend, type SendResponse } from './message-commands.js';
import { program, client } from './shared.js';

interface AgentRow {
  id: string;
  name: string | null;
  identity: { name?: string } | null;
}

class ChatScreen {
  /** Runs whose text was streamed or returned to a send: their session.reply is not shown again. */
  private readonly shown = new Set<string>();
  /** Replies that came while a send was waiting: shown once it is known which one was its own. */
  private readonly held: EventRecord[] = [];
  private streaming?: string;
  waiting?: AbortController;

  constructor(
    private readonly rl: Interface,
    private readonly name: string,
  ) {}

  onDelta(delta: { runId: string; text: string }): void {
    // Only the reply being waited for streams; any other is shown whole when it is posted.
    if (!this.waiting) return;
    if (this.streaming !== delta.runId) process.stdout.write(`${this.streaming ? '\n' : ''}${this.name}> `);
    this.streaming = delta.runId;
    this.shown.add(delta.runId);
    process.stdout.write(delta.text);
  }

  onReply(event: EventRecord): void {
    if (event.runId && this.shown.has(event.runId)) return;
    if (this.waiting) this.held.push(event);
    else this.showLate(event);
  }

  /** After a send's answer: its own reply is the one returned, any other held one is late. */
  answered(result: SendResponse): void {
    const streamed = !!result.runId && this.streaming === result.runId;
    if (result.runId) this.shown.add(result.runId);
    if (streamed) process.stdout.write('\n');
    if (!streamed || result.runStatus !== 'succeeded') process.stdout.write(`${this.name}> ${describeSend(result)}\n`);
    this.streaming = undefined;
    this.release();
  }

  /** The wait ended without an answer (Ctrl-C or an error). */
  release(): void {
    if (this.streaming) process.stdout.write('\n');
    this.streaming = undefined;
    this.waiting = undefined;
    for (const event of this.held.splice(0)) if (!event.runId || !this.shown.has(event.runId)) this.showLate(event);
  }

  private showLate(event: EventRecord): void {
    if (event.runId) this.shown.add(event.runId);
    const text = String((event.payload as { text?: string }).text ?? '');
    // Clear the prompt line (and what the user has typed), print above it, then draw it again.
    process.stdout.write(`\r\x1b[K${this.name}> ${text}\n`);
    this.rl.prompt(true);
    // readline redraws the typed text itself, except on a dumb terminal, where it writes only the prompt.
    if (process.env.TERM === 'dumb' && this.rl.line) process.stdout.write(this.rl.line);
  }
}

program
  .command('chat <agent>')
  .description('talk with an agent interactively (Ctrl-C stops a wait; Ctrl-D or /exit ends)')
  .action(async (agent: string) => {
    const api = client();
    const { agents: list } = await api.request<{ agents: AgentRow[] }>('GET', '/v1/agents');
    const found = list.find((candidate) => candidate.id === agent);
    if (!found)
      throw new SwitchboardError('AGENT_NOT_FOUND', `unknown agent "${agent}" (configured agents: ${list.map((a) => a.id).join(', ')})`);
    const sessionKey = `agent:${agent}:main`;
    const name = displayName(found);
    const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY });
    rl.setPrompt('you> ');
    const screen = new ChatScreen(rl, name);
    const events = new AbortController();
    void api
      .stream(
        `/v1/events?sessionKey=${encodeURIComponent(sessionKey)}&deltas=1`,
        (event) => {
          if (event.event === 'delta') screen.onDelta(JSON.parse(event.data) as { runId: string; text: string });
          else if (event.event === 'session.reply') screen.onReply(JSON.parse(event.data) as EventRecord);
        },
        events.signal,
      )
      .catch(() => {});
    rl.on('SIGINT', () => {
      if (screen.waiting) {
        screen.waiting.abort();
        return;
      }
      rl.close();
    });
    process.stdout.write(`chatting with ${name} (session ${sessionKey}). Ctrl-C stops waiting for a reply; /exit or Ctrl-D leaves.\n`);
    rl.prompt();
    // Iterating (rather than rl.question) keeps lines that arrive while a reply is pending, as piped input does.
    for await (const line of rl) {
      if (line.trim() === '/exit') break;
      if (line.trim()) {
        const waiting = new AbortController();
        screen.waiting = waiting;
        try {
          const result = await api.request<SendResponse>(
            'POST',
            '/v1/send',
            { target: agent, message: line, channel: 'cli', wait: true },
            waiting.signal,
          );
          screen.answered(result);
        } catch (error) {
          screen.release();
          if (waiting.signal.aborted) process.stdout.write(`(stopped waiting; the reply will show here when it comes)\n`);
          else process.stdout.write(`error: ${errorMessage(error)}\n`);
        }
      }
      rl.prompt();
    }
    process.stdout.write('\n');
    rl.close();
    events.abort();
  });
