// stepwise/testing: what a user needs to marble-test an agent in virtual time.
export { createSequentialIds } from '../core/ids.js';
export { createScriptedEngine, type Script, type ScriptedResponse } from '../engines/scripted.js';
export { createEventFactory, type EventFactory } from './event-factories.js';
export { labelOf } from './event-labels.js';
export {
  asVirtualTool,
  createVirtualTool,
  type AsVirtualToolConfig,
  type Scripted,
  type VirtualTool,
  type VirtualToolCall,
  type VirtualToolConfig,
} from './virtual-tool.js';
export { isVirtualTime, VirtualTimePromiseError } from '../tools/virtual-time.js';
