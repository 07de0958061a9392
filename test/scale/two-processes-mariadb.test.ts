import { describeTwoProcesses } from './two-processes.js';

describeTwoProcesses('MariaDB (cluster bus on Redis)', 'mariadb');
