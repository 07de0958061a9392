/**
 * The fixed secrets the tests use. Test configs take these constants (the harness sets the model key by default),
 * and the run-wide log check (`test/support/log-check-setup.ts`) fails the run when any log line of any test holds
 * one of them. Distinct, long and unlike any word, so a hit is always a leak.
 */
export const TEST_SECRETS = {
  modelApiKey: 'sk-test-model-key-7f3a9c2e51d4',
  fallbackApiKey: 'sk-test-fallback-key-0b8e6d4a2c91',
  serverApiKey: 'test-server-api-key-4d2c8e1f',
  adminToken: 'test-admin-token-5b9d1f3a7c2e',
  mcpBearerToken: 'test-mcp-bearer-token-9a1b7c3d',
  /** Reserved for the Telegram channel, web cookie and user-token secrets as they arrive. */
  telegramToken: '123456789:test-telegram-token-AAE5f0c2b7',
  cookieSecret: 'test-cookie-secret-6e4f2a8b0c1d3e5f',
  jwtSecret: 'test-jwt-secret-8c7b6a5d4e3f2a1b',
  /** The Telegram user account's api_hash: 32 hex characters, as my.telegram.org gives it. */
  telegramApiHash: 'c0ffee5e7a1b2d3c4e5f60718293a4b5',
} as const;
