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
};
