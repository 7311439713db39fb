export { endWith, hasEnded, type LoopPhase, type LoopPorts, type LoopState, type RunContext, type RunOutcome } from './loop-state.js';
export { executeTools, type ExecuteToolsConfig } from './execute-tools.js';
export { inference, type InferencePorts } from './inference.js';
export { pauseAt, pausePoint } from './pause-point.js';
export { snapshotHook, type Snapshot, type SnapshotHook, type SnapshotPhase } from './snapshot-hook.js';
export { toolLoop, type ToolLoopConfig } from './tool-loop.js';
