import type { NextFunction, Request, Response } from 'express';
import { errorBody } from '../server/errors.js';

/** A cluster step in front of a route: true when it answered, false to let the usual route answer. */
export type RouteStep = (req: Request, res: Response) => Promise<boolean>;

/** The step as express middleware: a store that cannot be read is a 503 `store_unavailable` (docs/protocol.md, Several instances). */
export function storeStep(step: RouteStep): (req: Request, res: Response, next: NextFunction) => void {
  return (req, res, next) => {
    step(req, res).then(
      (answered) => answered || next(),
      () => res.status(503).json(errorBody('store_unavailable', 'the store cannot be reached; try again')),
    );
  };
}

/** A conversation id as the routes accept it; anything else is left to the usual route to refuse. */
export const isConvId = (value: unknown): value is string => typeof value === 'string' && /^[A-Za-z0-9_-]{1,128}$/.test(value);
