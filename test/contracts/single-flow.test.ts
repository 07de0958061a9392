import { singleFlow } from '../../src/runtime/flows/single-flow.js';
import { flowContract } from './flow-contract.js';

flowContract('single', singleFlow);
