import type { Response } from 'express';
import type { z } from 'zod';

/** The one error body of the HTTP API (docs/protocol.md, Errors): `{"error": {code, message, details?}}`. */
export interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string; readonly details?: unknown };
}

/** A refusal a route throws; the error handler turns it into its status and JSON body. */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    /** Extra top-level fields of the reply (409 run_in_progress also names the conversation). */
    readonly extra?: Readonly<Record<string, unknown>>,
    /** Seconds for `Retry-After`: nothing was done, and the same request may be sent again. */
    readonly retryAfterS?: number,
  ) {
    super(message);
  }
}

export function errorBody(code: string, message: string, details?: unknown): ErrorBody {
  return { error: details === undefined ? { code, message } : { code, message, details } };
}

export function sendError(res: Response, error: HttpError): void {
  if (error.retryAfterS !== undefined) res.setHeader('Retry-After', String(error.retryAfterS));
  res.status(error.status).json({ ...(error.extra ?? {}), ...errorBody(error.code, error.message, error.details) });
}

/** One offending field of a 400 reply. */
export interface FieldIssue {
  readonly field: string;
  readonly message: string;
}

/** A 400 whose details list the offending fields, so a client can show them next to its inputs. */
export function invalidRequest(issues: readonly FieldIssue[], message?: string): HttpError {
  const names = [...new Set(issues.map((issue) => issue.field))];
  return new HttpError(400, 'invalid_request', message ?? `invalid ${names.join(', ')}`, { fields: issues });
}

/** Parses with zod or throws a 400 naming every offending field. */
export function parseOr400<T>(schema: z.ZodType<T>, value: unknown, what = 'body'): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((issue) => ({
    field: issue.path.length > 0 ? issue.path.join('.') : what,
    message: issue.message,
  }));
  throw invalidRequest(issues);
}

export const notFound = (message: string, code = 'not_found'): HttpError => new HttpError(404, code, message);
export const forbidden = (message: string): HttpError => new HttpError(403, 'forbidden', message);

/** 503 with `Retry-After: 1`: not done now (the store is away, the run's owner is changing); send it again. */
export const tryAgain = (code: string, message: string): HttpError => new HttpError(503, code, message, undefined, undefined, 1);
