/** Every `switchboard` command, registered on the one program (main.ts runs it; the help test reads it). */
import './gateway-commands.js';
import './agent-commands.js';
import './session-commands.js';
import './message-commands.js';
import './chat-command.js';
import './a2a-commands.js';
import './subagent-commands.js';
import './run-commands.js';
import './exchange-commands.js';
import './outbox-commands.js';
import './gate-commands.js';
import './channel-commands.js';
import './board-commands.js';
import './store-commands.js';
import './mcp-commands.js';
import './memory-commands.js';
import './mailbox-commands.js';
import './team-commands.js';
import './acp-command.js';
import './event-commands.js';
import './schedule-commands.js';

export { program } from './shared.js';
