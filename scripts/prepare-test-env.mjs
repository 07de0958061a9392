#!/usr/bin/env node
// Run by `npm test` before the suites: makes sure what they need is here — Debian's chromium for the browser
// tests, PostgreSQL on 127.0.0.1:5432 (or PALAVER_TEST_POSTGRES_URL), MariaDB on 127.0.0.1:3306 (or
// PALAVER_TEST_MYSQL_URL), Redis on 127.0.0.1:6379 — installing or
// starting what is missing when it can, and otherwise stopping at once with the exact command to run. It never
// skips a suite. Plain Node, no dependencies: it runs before `npm ci` too (see .ci/run).
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
import { connect } from 'node:net';

const CHROMIUM = '/usr/bin/chromium';
const isRoot = process.getuid?.() === 0;
const sudo = isRoot ? '' : 'sudo ';

function say(line) {
  console.log(`prepare-test-env: ${line}`);
}

/** Stops the test command with the command that fixes the problem. */
function fail(problem, command) {
  console.error(`prepare-test-env: ${problem}\n  Run: ${command}\n  then run npm test again.`);
  process.exit(1);
}

function onPath(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

function isExecutable(path) {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Runs a shell command; its output is shown only when it fails. True when it exits 0. */
function run(command) {
  say(`$ ${command}`);
  const result = spawnSync('sh', ['-c', command], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) process.stderr.write(`${result.stdout ?? ''}${result.stderr ?? ''}`);
  return result.status === 0;
}

/** True when something accepts TCP connections on host:port within `timeoutMs`. */
function reachable(host, port, timeoutMs = 1_000) {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

async function waitUntilReachable(host, port, seconds) {
  for (let i = 0; i < seconds * 2; i++) {
    if (await reachable(host, port)) return true;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return false;
}

function prepareChromium() {
  if (isExecutable(CHROMIUM)) return;
  const install = 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium';
  if (!onPath('apt-get'))
    fail(`${CHROMIUM} is missing (the browser tests drive it) and apt-get is not available.`, `install Debian's chromium so that ${CHROMIUM} exists`);
  if (!isRoot) fail(`${CHROMIUM} is missing (the browser tests drive it).`, `sudo sh -c '${install}'`);
  say(`${CHROMIUM} is missing; installing Debian's chromium for the browser tests`);
  if (!run(install) || !isExecutable(CHROMIUM)) fail(`installing chromium did not give ${CHROMIUM}.`, install);
}

async function preparePostgres() {
  const custom = process.env.PALAVER_TEST_POSTGRES_URL;
  if (custom) {
    // The developer chose the server: check it, but do not start or change anything.
    let url;
    try {
      url = new URL(custom);
    } catch {
      fail('PALAVER_TEST_POSTGRES_URL is not a URL.', 'export PALAVER_TEST_POSTGRES_URL=postgres://user:pass@host:5432/postgres');
    }
    const host = url.hostname || '127.0.0.1';
    const port = Number(url.port || 5432);
    if (!(await reachable(host, port, 3_000))) {
      fail(
        `PALAVER_TEST_POSTGRES_URL points at ${host}:${port}, which does not answer.`,
        'unset PALAVER_TEST_POSTGRES_URL   (to use the local PostgreSQL on 127.0.0.1:5432; or start the server it names)',
      );
    }
    return;
  }
  if (await reachable('127.0.0.1', 5432)) return;
  const clusters = existsSync('/etc/postgresql') ? readdirSync('/etc/postgresql').sort() : [];
  if (clusters.length === 0 || !onPath('pg_ctlcluster')) {
    fail(
      'PostgreSQL is not running on 127.0.0.1:5432 and no local cluster is installed.',
      `${sudo}apt-get install -y postgresql   (or export PALAVER_TEST_POSTGRES_URL=postgres://user:pass@host:5432/postgres)`,
    );
  }
  const version = clusters.at(-1);
  const start = `pg_ctlcluster --skip-systemctl-redirect ${version} main start`;
  if (!isRoot) fail('PostgreSQL is not running on 127.0.0.1:5432.', `sudo ${start}`);
  say('PostgreSQL is down; starting it');
  run(start);
  if (!(await waitUntilReachable('127.0.0.1', 5432, 10))) fail('PostgreSQL did not come up on 127.0.0.1:5432.', start);
}

async function prepareMariadb() {
  const custom = process.env.PALAVER_TEST_MYSQL_URL;
  if (custom) {
    // The developer chose the server: check it, but do not start or change anything.
    let url;
    try {
      url = new URL(custom);
    } catch {
      fail('PALAVER_TEST_MYSQL_URL is not a URL.', 'export PALAVER_TEST_MYSQL_URL=mysql://user:pass@host:3306/test');
    }
    const host = url.hostname || '127.0.0.1';
    const port = Number(url.port || 3306);
    if (!(await reachable(host, port, 3_000))) {
      fail(
        `PALAVER_TEST_MYSQL_URL points at ${host}:${port}, which does not answer.`,
        'unset PALAVER_TEST_MYSQL_URL   (to use the local MariaDB on 127.0.0.1:3306; or start the server it names)',
      );
    }
    return;
  }
  if (await reachable('127.0.0.1', 3306)) return;
  const daemon = '/usr/sbin/mariadbd';
  const start = `start-stop-daemon --start --oknodo --background --exec ${daemon}`;
  if (!isExecutable(daemon)) {
    fail(
      'MariaDB is not running on 127.0.0.1:3306 and mariadbd is not installed.',
      `${sudo}apt-get install -y mariadb-server && ${sudo}${start}   (or export PALAVER_TEST_MYSQL_URL=mysql://user:pass@host:3306/test)`,
    );
  }
  if (!isRoot) fail('MariaDB is not running on 127.0.0.1:3306.', `sudo ${start}`);
  say('MariaDB is down; starting it');
  run(start);
  if (!(await waitUntilReachable('127.0.0.1', 3306, 30))) fail('MariaDB did not come up on 127.0.0.1:3306.', start);
}

async function prepareRedis() {
  if (await reachable('127.0.0.1', 6379)) return;
  const start = 'redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /tmp --logfile /tmp/palaver-test-redis.log';
  if (!onPath('redis-server'))
    fail('Redis is not running on 127.0.0.1:6379 and redis-server is not installed.', `${sudo}apt-get install -y redis-server && ${start}`);
  say('Redis is down; starting it');
  run(start);
  if (!(await waitUntilReachable('127.0.0.1', 6379, 10))) fail('Redis did not come up on 127.0.0.1:6379.', start);
}

prepareChromium();
await preparePostgres();
await prepareMariadb();
await prepareRedis();
say(
  `ready: chromium, PostgreSQL${process.env.PALAVER_TEST_POSTGRES_URL ? ' (PALAVER_TEST_POSTGRES_URL)' : ''}, ` +
    `MariaDB${process.env.PALAVER_TEST_MYSQL_URL ? ' (PALAVER_TEST_MYSQL_URL)' : ''}, Redis`,
);
