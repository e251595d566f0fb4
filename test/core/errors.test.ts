import { describe, expect, it } from 'vitest';
import { SwitchboardError, toSwitchboardError } from '../../src/core/errors.js';

describe('errors at the edge', () => {
  it('a store or disk failure is STORE_FAILED (503) without the message that may carry a path; a SwitchboardError stays; anything else is INTERNAL', () => {
    const full = Object.assign(new Error('database or disk is full: /var/lib/switchboard/switchboard.db'), { code: 'SQLITE_FULL' });
    expect(toSwitchboardError(full).toJSON()).toEqual({
      code: 'STORE_FAILED',
      message:
        "the store could not take this request (SQLITE_FULL): nothing was changed by it; try again, and check the gateway's log and disk",
      details: { cause: 'SQLITE_FULL' },
    });
    expect(toSwitchboardError(full).httpStatus).toBe(503);
    for (const code of ['SQLITE_IOERR_WRITE', 'SQLITE_BUSY', '57P01', '08006', '53100']) {
      expect(toSwitchboardError(Object.assign(new Error('x'), { code })).code).toBe('STORE_FAILED');
    }
    // A remote agent that refuses the connection is not the store failing.
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EPRIVATEADDRESS']) {
      expect(toSwitchboardError(Object.assign(new Error('connect failed'), { code })).code).toBe('INTERNAL');
    }
    expect(toSwitchboardError(new Error('wrapped', { cause: Object.assign(new Error('inner'), { code: 'SQLITE_FULL' }) })).code).toBe(
      'STORE_FAILED',
    );
    // A value PostgreSQL cannot keep (too long, say) came from the request: a 400, without the database's words.
    const tooLong = Object.assign(new Error('value too long for type character varying(128)'), { code: '22001' });
    expect(toSwitchboardError(tooLong).toJSON()).toEqual({
      code: 'INVALID_REQUEST',
      message:
        'a value in the request is not one the store can keep (22001: too long, out of range or badly encoded); nothing was changed by it',
      details: { cause: '22001' },
    });
    const own = new SwitchboardError('CLAIM_LOST', 'claim lost');
    expect(toSwitchboardError(own)).toBe(own);
    expect(toSwitchboardError(new TypeError('x is undefined')).toJSON()).toEqual({ code: 'INTERNAL', message: 'x is undefined' });
    expect(toSwitchboardError('a string').toJSON()).toEqual({ code: 'INTERNAL', message: 'a string' });
  });

  it("a transaction PostgreSQL ended for idling (25P03), a cancelled or conflicting one, and node-postgres's own connection errors (no SQLSTATE) are STORE_FAILED with their cause", () => {
    for (const code of ['25P03', '57P05', '57014', '40001', '40P01', '55P03']) {
      expect(toSwitchboardError(Object.assign(new Error('x'), { code })).toJSON()).toMatchObject({
        code: 'STORE_FAILED',
        details: { cause: code },
      });
    }
    for (const message of [
      'timeout exceeded when trying to connect',
      'Connection terminated unexpectedly',
      'Connection terminated due to connection timeout',
      'Client has encountered a connection error and is not queryable',
      'Client was closed and is not queryable',
      'Query read timeout',
    ]) {
      expect(toSwitchboardError(new Error(message)).toJSON()).toEqual({
        code: 'STORE_FAILED',
        message: `the store could not take this request (${message}): nothing was changed by it; try again, and check the gateway's log and disk`,
        details: { cause: message },
      });
    }
    // Found under the error that wraps it; but only the exact words, and only on an error without a code of its own.
    expect(toSwitchboardError(new Error('insert failed', { cause: new Error('Connection terminated unexpectedly') })).code).toBe(
      'STORE_FAILED',
    );
    expect(toSwitchboardError(new Error('the Connection terminated unexpectedly, said the agent')).code).toBe('INTERNAL');
    expect(toSwitchboardError(Object.assign(new Error('Query read timeout'), { code: 'ERR_OTHER' })).code).toBe('INTERNAL');
  });
});
