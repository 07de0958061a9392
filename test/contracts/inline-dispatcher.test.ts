import { InlineToolDispatcher } from '../../src/runtime/tools/inline-dispatcher.js';
import { toolDispatcherContract } from './tool-dispatch-contract.js';

toolDispatcherContract('inline', (registry) => new InlineToolDispatcher(registry));
