/** Login: the control token, typed once; `switchboard console` prints a one-time link that skips this page. */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { html } from '../html.js';

export function LoginPage({ expired }: { expired: boolean }) {
  const [error, setError] = useState<string | null>(
    expired ? 'That login link was used already or has expired: run "switchboard console" for a new one.' : null,
  );
  const submit = async (event: Event) => {
    event.preventDefault();
    const token = (new FormData(event.target as HTMLFormElement).get('token') as string).trim();
    try {
      await api('/login', { method: 'POST', body: { token } });
      location.hash = '#/';
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  return html`
    <form class="card login-form" onSubmit=${submit}>
      <h1>Switchboard console</h1>
      <p>Paste this gateway's control token (<code>switchboard token</code> prints it), or open the link <code>switchboard console</code> prints.</p>
      <input name="token" type="password" autocomplete="off" placeholder="control token" aria-label="control token" />
      <button type="submit">Log in</button>
      ${error && html`<p class="error" role="alert">${error}</p>`}
    </form>
  `;
}
