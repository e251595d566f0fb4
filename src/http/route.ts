/** What the control API's route tables are written against: a handler, and the function that adds one for a method and path. */
import type { IncomingMessage } from 'node:http';

export type Handler = (request: IncomingMessage, url: URL, params: string[]) => Promise<unknown>;
export type RouteAdder = (method: string, pattern: RegExp, handler: Handler) => void;
