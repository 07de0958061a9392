import type { StoreDialectPlugin } from '../store-dialect.js';

/** MariaDB 10.11+ and MySQL (`mysql://`, `mariadb://`): no notifications, so Redis carries the bus. */
export const mysqlDialect: StoreDialectPlugin = {
  name: 'mysql',
  schemes: ['mysql', 'mariadb'],
  server: true,
  defaultBus: 'redis',
  async open(url, options) {
    const { openMysqlDatabase, redactMysqlUrl } = await import('./open-mysql-database.js');
    return { db: await openMysqlDatabase(url, options), heartbeatDb: await openMysqlDatabase(url, { ...options, poolSize: 1 }), where: redactMysqlUrl(url) };
  },
  async loadSql() {
    return (await import('./mysql-sql.js')).mysqlSql;
  },
  errors: {
    codes: {
      ER_DUP_ENTRY: 'conflict',
      ER_NO_REFERENCED_ROW_2: 'foreign_key',
      ER_ROW_IS_REFERENCED_2: 'foreign_key',
      ER_BAD_NULL_ERROR: 'not_null',
      PROTOCOL_CONNECTION_LOST: 'unreachable',
      ER_CON_COUNT_ERROR: 'unreachable',
      ER_SERVER_SHUTDOWN: 'unreachable',
    },
    // InnoDB picks a deadlock's victim in ordinary traffic (see isDeadlock).
    deadlock: 'ER_LOCK_DEADLOCK',
  },
};
