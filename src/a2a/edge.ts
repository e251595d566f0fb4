/**
 * The A2A front's edge, before the SDK sees a request: the JSON-RPC envelope and the parameters the SDK
 * passes through unchecked are validated here (with the codes JSON-RPC and A2A give them), v1.0 method
 * names are served as v1.0 without a version header, and every error on every route, the body parser's
 * and the router's included, leaves in the binding's own shape with no stack and no path.
 */
import express, { type NextFunction, type Request, type Response } from 'express';

const ERROR_INFO_TYPE = 'type.googleapis.com/google.rpc.ErrorInfo';
/** ErrorInfo's domain for A2A's own errors (A2A 1.0, section 11.6). */
export const A2A_ERROR_DOMAIN = 'a2a-protocol.org';
/** ErrorInfo's domain for this gateway's refusals, which are not A2A errors: authentication, permission, rate limit. */
export const GATEWAY_ERROR_DOMAIN = 'switchboard';

/**
 * A `google.rpc.ErrorInfo` detail, as A2A 1.0 puts one in JSON-RPC's `error.data` array and HTTP+JSON's
 * `error.details` (sections 9.5 and 11.6). Metadata values are strings, as ErrorInfo's map is.
 */
export function errorInfo(reason: string, domain: string, metadata?: Record<string, string>): Record<string, unknown> {
  return { '@type': ERROR_INFO_TYPE, reason, domain, ...(metadata ? { metadata } : {}) };
}

const INVALID_REQUEST = -32600;
const INVALID_PARAMS = -32602;
const PARSE_ERROR = -32700;
const INTERNAL_ERROR = -32603;
const MAX_BODY = '1mb';

/** v1.0 method names: none of them is a v0.3 name, so they need no A2A-Version header to be understood. */
const V1_METHODS = new Set([
  'SendMessage',
  'SendStreamingMessage',
  'GetTask',
  'ListTasks',
  'CancelTask',
  'SubscribeToTask',
  'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig',
  'GetExtendedAgentCard',
]);
/** v0.3 methods whose params name a task by `id`. */
const LEGACY_TASK_ID = new Set([
  'tasks/get',
  'tasks/cancel',
  'tasks/resubscribe',
  'tasks/pushNotificationConfig/get',
  'tasks/pushNotificationConfig/list',
  'tasks/pushNotificationConfig/delete',
]);
const V1_TASK_ID = new Set(['GetTask', 'CancelTask', 'SubscribeToTask']);
const V1_ROLES = new Set(['ROLE_USER', 'ROLE_AGENT']);
const LEGACY_ROLES = new Set(['user', 'agent']);

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const validId = (id: unknown) =>
  id === undefined || id === null || typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id));

/** What is wrong with a message's parameters, or undefined. */
function messageProblem(message: unknown, v1: boolean): string | undefined {
  if (!isObject(message)) return 'params.message is required';
  if (!Array.isArray(message.parts) || message.parts.length === 0) return 'params.message.parts must hold at least one part';
  if (v1 && !V1_ROLES.has(String(message.role))) return 'params.message.role must be ROLE_USER or ROLE_AGENT';
  if (!v1 && !LEGACY_ROLES.has(String(message.role))) return 'params.message.role must be "user" or "agent"';
  if (typeof message.messageId !== 'string' || message.messageId === '') return 'params.message.messageId must be a non-empty string';
  return undefined;
}

/** What is wrong with the parameters of `method`, or undefined when the SDK can take them. */
export function paramsProblem(method: string, params: unknown): string | undefined {
  if (params !== undefined && !isObject(params)) return 'params must be an object';
  const p = (params ?? {}) as Json;
  const v1 = V1_METHODS.has(method);
  if (LEGACY_TASK_ID.has(method) && (typeof p.id !== 'string' || p.id === '')) return 'params.id must be a non-empty string (the task id)';
  if (V1_TASK_ID.has(method) && (typeof p.id !== 'string' || p.id === '')) return 'params.id must be a non-empty string (the task id)';
  if (method === 'SendMessage' || method === 'SendStreamingMessage' || method === 'message/send' || method === 'message/stream') {
    const problem = messageProblem(p.message, v1);
    if (problem) return problem;
  }
  for (const key of ['historyLength', 'pageSize']) {
    const value = p[key] ?? (isObject(p.configuration) ? p.configuration[key] : undefined);
    if (value !== undefined && value !== null && !(Number.isInteger(value) && (value as number) >= 0))
      return `${key} must be a non-negative integer`;
  }
  if (
    p.statusTimestampAfter !== undefined &&
    (typeof p.statusTimestampAfter !== 'string' || Number.isNaN(Date.parse(p.statusTimestampAfter)))
  ) {
    return 'params.statusTimestampAfter must be an ISO 8601 timestamp';
  }
  if (p.pageToken !== undefined && p.pageToken !== '' && !(typeof p.pageToken === 'string' && /^\d{1,9}$/.test(p.pageToken)))
    return 'params.pageToken is not a page token this server gave';
  return undefined;
}

function rpcError(response: Response, id: unknown, code: number, message: string): void {
  response.status(200).json({ jsonrpc: '2.0', id: validId(id) ? (id ?? null) : null, error: { code, message } });
}

/** Parses and checks a JSON-RPC request before the SDK's handler; answers itself when it is invalid. */
export function jsonRpcEdge(): express.RequestHandler[] {
  return [
    express.json({ limit: MAX_BODY, strict: false }),
    (request: Request, response: Response, next: NextFunction) => {
      // Not parsed (not application/json): the SDK's own content-type guard answers.
      if (request.method !== 'POST' || !request.is('application/json')) return next();
      const body: unknown = request.body;
      if (!isObject(body))
        return rpcError(
          response,
          null,
          INVALID_REQUEST,
          Array.isArray(body)
            ? 'batch requests are not supported: send one JSON-RPC request per call'
            : 'the body must be a JSON-RPC request object',
        );
      const method = body.method;
      if (body.jsonrpc !== '2.0' || typeof method !== 'string' || method === '' || !validId(body.id)) {
        return rpcError(
          response,
          body.id,
          INVALID_REQUEST,
          'not a JSON-RPC 2.0 request: it needs jsonrpc "2.0", a method name and a string, number or null id',
        );
      }
      if (V1_METHODS.has(method) && !request.headers['a2a-version']) request.headers['a2a-version'] = '1.0';
      const problem = paramsProblem(method, body.params);
      // Before a stream starts, an error is a plain JSON-RPC error, as the SDK answers its own (an unknown or
      // terminal task) and as the A2A TCK requires (STREAM-SUB-003).
      if (problem) return rpcError(response, body.id, INVALID_PARAMS, problem);
      next();
    },
  ];
}

const REST_MEDIA_TYPES = new Set(['application/json', 'application/a2a+json']);

/**
 * Before the SDK's HTTP+JSON handler: a body of a media type the binding does not take is ContentTypeNotSupportedError
 * with the status A2A maps it to, 415 (the SDK answers 400). A request without a Content-Type goes on, as in the SDK.
 */
export function restEdge(): express.RequestHandler {
  return (request: Request, response: Response, next: NextFunction) => {
    const contentType = request.header('content-type');
    if (contentType === undefined || REST_MEDIA_TYPES.has(contentType.split(';', 1)[0]!.trim().toLowerCase())) return next();
    response.status(415).json({
      error: {
        code: 415,
        status: 'INVALID_ARGUMENT',
        message: `unsupported Content-Type "${contentType}": send the body as application/json (or application/a2a+json)`,
        details: [errorInfo('CONTENT_TYPE_NOT_SUPPORTED', A2A_ERROR_DOMAIN)],
      },
    });
  };
}

interface HttpError {
  status?: number;
  statusCode?: number;
  type?: string;
  message?: string;
}

/** Words for the body parser's and router's errors; never their message, which may name files. */
function describe(error: HttpError, status: number): string {
  switch (error.type) {
    case 'entity.too.large':
      return `the request body is larger than ${MAX_BODY}`;
    case 'charset.unsupported':
      return 'unsupported charset: send the body as UTF-8';
    case 'encoding.unsupported':
      return 'unsupported Content-Encoding: send the body unencoded, gzip, deflate or br';
    case 'entity.parse.failed':
      return 'the body is not valid JSON';
    case 'request.aborted':
      return 'the request was aborted';
  }
  if (status === 400) return 'malformed request (check the percent-escapes in the URL)';
  return status >= 500 ? 'internal error' : 'request refused';
}

/**
 * The last handler of the A2A app: the error in the shape of the route's binding (JSON-RPC, HTTP+JSON or
 * plain JSON), with a status the client can act on. Nothing of the error's own text or stack is sent.
 */
export function a2aErrorHandler(onError: (error: unknown) => void) {
  return (error: unknown, request: Request, response: Response, _next: NextFunction): void => {
    const raw = (error ?? {}) as HttpError;
    const status = raw.status ?? raw.statusCode ?? 500;
    const httpStatus = status >= 400 && status < 600 ? status : 500;
    if (httpStatus >= 500) onError(error);
    const message = describe(raw, httpStatus);
    if (response.headersSent) {
      response.end();
      return;
    }
    if (/\/jsonrpc\/?$/.test(request.path)) {
      const code = raw.type === 'entity.parse.failed' ? PARSE_ERROR : httpStatus >= 500 ? INTERNAL_ERROR : INVALID_REQUEST;
      response
        .status(httpStatus === 400 || raw.type === 'entity.parse.failed' ? 200 : httpStatus)
        .json({ jsonrpc: '2.0', id: null, error: { code, message } });
      return;
    }
    const reason =
      httpStatus === 413
        ? 'PAYLOAD_TOO_LARGE'
        : httpStatus === 415
          ? 'UNSUPPORTED_MEDIA_TYPE'
          : httpStatus >= 500
            ? 'INTERNAL'
            : 'INVALID_ARGUMENT';
    response.status(httpStatus).json({ error: { code: httpStatus, status: reason, message } });
  };
}
