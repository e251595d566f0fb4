import type { Signals } from '../../ports/index.js';

/** One gateway per database (SQLite holds its file exclusively): nobody else to tell. */
export const NO_SIGNALS: Signals = { notify: () => {}, listen: () => () => {} };
