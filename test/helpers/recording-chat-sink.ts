/**
 * A ChatSink for account tests: it records what an account hands it. `hold()` keeps the next messages unresolved
 * until `release()`, to see what the account does before its input is durable; `answer` is what a button press gets.
 */
import type { ChatAction, ChatMessage, ChatSink } from '../../src/ports/channels.js';

export class RecordingChatSink implements ChatSink {
  readonly messages: ChatMessage[] = [];
  readonly actions: ChatAction[] = [];
  readonly states: { state: string; error?: string }[] = [];
  answer = 'Approved.';
  /** The next this many `message` calls fail (the store down), after recording the call. */
  failNext = 0;
  /** Every `message` call, failed ones included. */
  calls = 0;
  private held: (() => void)[] | undefined;

  async message(message: ChatMessage): Promise<void> {
    this.calls += 1;
    if (this.failNext > 0) {
      this.failNext -= 1;
      throw new Error('the store is down');
    }
    this.messages.push(message);
    if (this.held) await new Promise<void>((resolve) => this.held?.push(resolve));
  }

  async action(action: ChatAction): Promise<string> {
    this.actions.push(action);
    return this.answer;
  }

  state(state: 'connecting' | 'connected' | 'stopped' | 'error', error?: string): void {
    this.states.push(error === undefined ? { state } : { state, error });
  }

  hold(): void {
    this.held = [];
  }

  release(): void {
    const waiting = this.held ?? [];
    this.held = undefined;
    for (const resolve of waiting) resolve();
  }
}
