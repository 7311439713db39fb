import type { CliServer } from '../helpers/server-cli.js';
import { useRedisServer } from '../helpers/redis-server.js';
import { useDurableServers } from '../durable/helpers.js';

/** Lease of the instances tests start: short, so a takeover is quick. */
export const TEST_LEASE_MS = 1000;

/** A redis-server per file and, per test, two `serve --store redis` instances on it (A and B). */
export function useTwoInstances(): () => Promise<{ a: CliServer; b: CliServer }> {
  const redis = useRedisServer();
  const { dir: d, serve } = useDurableServers();
  return async () => {
    const script = d().script('tool', 'slow');
    const flags = ['--store', 'redis', '--redis-url', redis().url, '--lease-ms', String(TEST_LEASE_MS)];
    const [a, b] = await Promise.all([serve(d(), script, flags), serve(d(), script, flags)]);
    return { a, b };
  };
}
