import { describeTwoProcesses } from './two-processes.js';

describeTwoProcesses('SQLite (one machine, one file)', 'sqlite');
