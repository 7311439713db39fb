import type { Response } from 'express';
import type { Observable } from 'rxjs';

/**
 * Streams `events$` as the response, each event encoded by the protocol's own encoder, and ends the
 * response when it completes. The headers go out at once, so a client sees the stream open before the
 * first event. A client that goes away unsubscribes, which leaves the run as it is: a view never
 * cancels or decides anything by disconnecting (docs/ag-ui.md, Disconnects).
 */
export function streamSse<T>(res: Response, events$: Observable<T>, encode: (event: T) => string, failed: (error: unknown) => T): void {
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  const subscription = events$.subscribe({
    next: (event) => void res.write(encode(event)),
    error: (error: unknown) => {
      res.write(encode(failed(error)));
      res.end();
    },
    complete: () => void res.end(),
  });
  res.once('close', () => subscription.unsubscribe());
}
