import { describeTwoProcesses } from './two-processes.js';

describeTwoProcesses('PostgreSQL', 'postgres');
