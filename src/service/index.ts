/**
 * One service on many instances (docs/protocol.md, Several instances): the adapters an instance
 * plugs under the runtime when its store is Redis. See src/store/redis/index.ts for the key layout.
 * - Leases (./run-leases.ts): one heartbeat per instance, a lease per run holding the fencing token
 *   of the instance that runs it, which every write of the run carries (the store refuses it otherwise).
 * - Commands (./commands.ts): the command port over pub/sub, so a command reaches the instance that
 *   runs its conversation.
 * - Frames (./service-frames.ts): the frame source a WebSocket follows, wherever the run executes.
 * - Directory (./directory.ts): the conversations and pauses the read routes show, the service's.
 * - Failover (./orphans.ts): the runs of an instance that died are taken over.
 */
import type { RunOwnership } from '../core/ownership.js';
import type { RecoverOptions } from '../sessions/recovery.js';
import type { Stepwise } from '../sessions/runtime.js';
import { createServiceDirectory } from './directory.js';
import { commandsOf, connectInstance, recoverClaimed, watchOrphansOf, type ServiceCommands, type InstanceConfig } from './instance.js';

export type { InstanceConfig, InstanceStore } from './instance.js';

/** A runtime joined to its service. */
export interface ServiceRuntime {
  readonly instanceId: string;
  /**
   * The runtime as an instance of the service: its `frames` follow every instance's frames, its
   * `directory` lists the service's conversations and pauses (./directory.ts), its `commands` reach
   * the instance that runs the conversation (./commands.ts).
   */
  readonly stepwise: Stepwise;
  /** The ownership port the runtime was made with: takes the conversation's lease, then joins it. */
  readonly ownership: RunOwnership;
}

export function joinService(base: Stepwise, config: InstanceConfig): ServiceRuntime {
  const instance = connectInstance(base, config);
  const { store, leases, frames, pauses, pauseFeed, join } = instance;
  const parts: { orphans?: { dispose(): void }; commands?: ServiceCommands; recovery?: RecoverOptions } = {};
  const stop = (): void => {
    pauses.dispose();
    pauseFeed.dispose();
    parts.orphans?.dispose();
    parts.commands?.dispose();
    void leases.dispose().finally(() => instance.disconnect());
  };
  const claim = async (convId: string): Promise<boolean> => {
    const held = await leases.acquire(convId);
    // Then the conversation as the store has it: a run another instance ended just before is in it.
    await join(convId);
    // A lease taken from an instance whose heartbeat lapsed (stalled past it, though alive) comes with
    // that instance's run, stopped there by its refused writes: it goes on here, and a new run waits.
    if (held && base.sessions.get(convId)?.running !== true && (await store.checkpoints(convId)).length > 0) {
      const taken = await base.takeOver(convId, parts.recovery ?? {});
      instance.log(`service: took over the run of ${convId} with its lease (its instance stalled past its heartbeat)${taken.failed ? '; it ended failed' : ''}`);
    }
    return held;
  };
  const stepwise: Stepwise = {
    ...base,
    frames,
    directory: createServiceDirectory({ stepwise: base, local: base.directory, store, join, pauseFrames$: pauseFeed.frames$ }),
    commands: (handler) => (parts.commands = commandsOf(instance, handler)),
    recover: async (options = {}) => {
      parts.recovery = options;
      const report = await recoverClaimed(instance, options);
      await parts.commands?.ready;
      // From now on this instance also takes over the runs of instances that die.
      parts.orphans ??= watchOrphansOf(instance, options);
      return report;
    },
    dispose: () => {
      base.dispose();
      frames.dispose();
      stop();
    },
    suspend: async () => {
      await base.suspend();
      frames.dispose();
      stop();
    },
  };
  return { instanceId: instance.instanceId, stepwise, ownership: { claim } };
}

export { createServiceFrames, type FrameTail$ } from './service-frames.js';
