import { randomUUID } from 'node:crypto';
import { createScriptedEngine } from '../../src/engines/scripted.js';
import { createCommandHandler } from '../../src/sessions/commands/handler.js';
import { createStepwise, type Stepwise } from '../../src/sessions/runtime.js';
import { createRedisStore } from '../../src/store/redis/redis-store.js';
import { useRedisServer } from '../helpers/redis-server.js';
import { toolThenAnswer } from '../helpers/server-harness.js';

/**
 * A command whose store read fails because the store is away (docs/protocol.md, Several instances): the
 * read comes before anything took effect, so it is answered as the store being unavailable (503 with
 * Retry-After), not as a bug (500 internal).
 */
describe('the command handler while the store is away', () => {
  const redis = useRedisServer();
  let stepwise: Stepwise | undefined;

  afterEach(async () => {
    await redis().start();
    stepwise?.dispose();
  });

  it('should answer a decision it must look up in the store store_unavailable, to be sent again', async () => {
    const store = createRedisStore({ url: redis().url, keyPrefix: `handler-${randomUUID()}:`, commandTimeoutMs: 500 });
    stepwise = createStepwise({ engine: createScriptedEngine(toolThenAnswer(1)), store });
    const onError = vi.fn();
    const handler = createCommandHandler(stepwise, { onError });
    await redis().stop();
    const result = await handler({ command: { type: 'decide', pause_id: 'pause_elsewhere' }, conv_id: 'c1' });
    expect(result).toMatchObject({ ok: false, error: { code: 'store_unavailable', retry_after_s: 1 } });
    expect(onError).not.toHaveBeenCalled();
  });
});
