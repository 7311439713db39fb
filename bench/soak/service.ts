import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { startRedisServer, type RedisServer } from '../../test/helpers/redis-server.js';
import { ensureBuilt, startCli, type CliServer } from '../../test/helpers/server-cli.js';
import type { Fixtures } from './fixtures.js';
import type { Rng } from './rng.js';

/**
 * The service under soak: a redis-server of its own and N `stepwise serve --store redis` processes on
 * it, or one `stepwise serve --store sqlite` process on a data dir of its own; all started here and
 * stopped here by PID. What the harness knows of ownership comes from outside: the instance a run was
 * started on owns it until a `service: took over the run of <conv_id>` line on another instance's
 * stdout says otherwise (with SQLite, the one instance owns every run, again once it restarted).
 */
export interface Instance {
  readonly index: number;
  /** Undefined while killed. */
  server: CliServer | undefined;
  base: string;
  wsBase: string;
}

export interface Takeover {
  readonly at: number;
  readonly instance: number;
  readonly conv_id: string;
}

export interface Service {
  /** Undefined with the SQLite store. */
  readonly redis: RedisServer | undefined;
  /** Where the store is: Redis's URL, or the SQLite data dir. */
  readonly storeAt: string;
  readonly instances: readonly Instance[];
  /** Who owns each conversation as far as the harness can tell; undefined: not known (after a kill). */
  readonly owners: Map<string, number | undefined>;
  readonly takeovers: Takeover[];
  /** Lines the instances wrote to stderr. */
  stderrLines(): number;
  isAlive(index: number): boolean;
  /** A live instance at random, none of `except` when another is alive. */
  pick(...except: (number | undefined)[]): Instance;
  /** The PIDs each instance ran as (a restart adds one), to tie a tool's log line to an instance. */
  readonly pids: readonly number[][];
  /** SIGKILL by PID; resolves once the process is gone. */
  kill(index: number): Promise<void>;
  /** Starts a killed instance again with the same flags (a new port; with SQLite, the same data dir). */
  restart(index: number): Promise<void>;
  stop(): Promise<void>;
}

export interface ServiceConfig {
  readonly store: 'redis' | 'sqlite';
  readonly dir: string;
  readonly fixtures: Fixtures;
  readonly instances: number;
  readonly leaseMs: number;
  readonly rng: Rng;
}

/** Long enough that no pause of the soak reaches its deadline: every resolution must be an operator's. */
const PAUSE_TIMEOUT_MS = 3_600_000;

const TAKEOVER = /service: took over the run of ([A-Za-z0-9_-]+)/;

export async function startService(config: ServiceConfig): Promise<Service> {
  ensureBuilt();
  const redis = config.store === 'redis' ? await startRedisServer() : undefined;
  const dataDir = join(config.dir, 'data');
  const owners = new Map<string, number | undefined>();
  const takeovers: Takeover[] = [];
  let stderrLines = 0;
  const storeFlags = redis ? ['--store', 'redis', '--redis-url', redis.url, '--lease-ms', String(config.leaseMs)] : ['--store', 'sqlite', '--data-dir', dataDir];
  const flags = [
    '--port', '0', '--debug', ...storeFlags,
    '--engine', 'scripted', '--script', config.fixtures.script, '--tools', config.fixtures.tools,
    '--pause-timeout-ms', String(PAUSE_TIMEOUT_MS),
  ];

  const onLine = (index: number, line: string): void => {
    const taken = TAKEOVER.exec(line);
    if (!taken) return;
    const convId = taken[1] as string;
    takeovers.push({ at: Date.now(), instance: index, conv_id: convId });
    owners.set(convId, index);
  };
  const pids: number[][] = Array.from({ length: config.instances }, () => []);
  const launch = async (index: number): Promise<CliServer> => {
    const server = await startCli(flags);
    if (server.process.pid !== undefined) pids[index]?.push(server.process.pid);
    const logTo = (stream: Readable | null, name: string, each: (line: string) => void): void =>
      followLines(stream, (line) => {
        appendFileSync(join(config.dir, `instance-${index}.${name}.log`), `${new Date().toISOString()} ${line}\n`);
        each(line);
      });
    appendFileSync(join(config.dir, `instance-${index}.stdout.log`), server.stdout());
    logTo(server.process.stdout, 'stdout', (line) => onLine(index, line));
    logTo(server.process.stderr, 'stderr', () => (stderrLines += 1));
    return server;
  };

  const instances: Instance[] = [];
  const launched = await Promise.allSettled(Array.from({ length: config.instances }, (_, index) => launch(index)));
  const failed = launched.find((result) => result.status === 'rejected');
  if (failed) {
    for (const result of launched) if (result.status === 'fulfilled') await result.value.stop('SIGKILL');
    await redis?.remove();
    throw failed.reason;
  }
  launched.forEach((result, index) => {
    const server = (result as PromiseFulfilledResult<CliServer>).value;
    instances.push({ index, server, base: server.base, wsBase: server.wsBase });
  });

  const live = (): Instance[] => instances.filter((instance) => instance.server !== undefined);
  // Should the harness itself die (an uncaught error, process.exit), its processes must not outlive it.
  const killOnExit = (): void => {
    for (const pid of [...instances.map((instance) => instance.server?.process.pid), redis?.pid]) {
      if (pid === undefined) continue;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
  };
  process.on('exit', killOnExit);
  return {
    redis,
    storeAt: redis ? redis.url : dataDir,
    instances,
    owners,
    takeovers,
    stderrLines: () => stderrLines,
    isAlive: (index) => instances[index]?.server !== undefined,
    pids,
    pick: (...except) => {
      const candidates = live();
      // The exclusions are in order of importance: the last ones are given up first when nothing else is alive.
      for (let kept = except.length; kept >= 0; kept -= 1) {
        const others = candidates.filter((instance) => !except.slice(0, kept).includes(instance.index));
        if (others.length > 0) return others[Math.floor(config.rng() * others.length)] as Instance;
      }
      // The one instance of a SQLite store, while it restarts: its requests are refused and retried.
      if (instances.length === 1) return instances[0] as Instance;
      // Every instance of a service dead at once never happens in a soak (one kill at a time); say so if it does.
      throw new Error('soak: no live instance');
    },
    kill: async (index) => {
      const instance = instances[index] as Instance;
      const server = instance.server;
      instance.server = undefined;
      await server?.stop('SIGKILL');
      for (const [convId, owner] of owners) if (owner === index) owners.set(convId, undefined);
    },
    restart: async (index) => {
      const instance = instances[index] as Instance;
      const server = await launch(index);
      Object.assign(instance, { server, base: server.base, wsBase: server.wsBase });
      // A SQLite store's one instance recovers every run it had: nobody else could take one over.
      if (!redis) for (const [convId, owner] of owners) if (owner === undefined) owners.set(convId, index);
    },
    stop: async () => {
      process.off('exit', killOnExit);
      await Promise.all(instances.map(async (instance) => {
        const server = instance.server;
        instance.server = undefined;
        await server?.stop('SIGKILL');
      }));
      await redis?.remove();
    },
  };
}

/** Calls `each` per complete line of a stream (chunks may end mid-line). */
function followLines(stream: Readable | null, each: (line: string) => void): void {
  let rest = '';
  stream?.on('data', (chunk: Buffer) => {
    const lines = (rest + chunk.toString()).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) each(line);
  });
}
