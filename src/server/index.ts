export { createHttpApp, DEFAULT_MAX_BODY_BYTES, type DashboardOptions, type HttpAppOptions } from './http-app.js';
export { adminGuard, principalOf, type AdminGuardOptions } from './admin-guard.js';
export type { AdminPrincipal, OperatorAuthenticator } from '../admin/admin-principal.js';
export { startHttpServer, type HttpServerOptions, type RunningHttpServer } from './http-server.js';
export { adminTokenAuth, adminTokenMatches, apiKeyAuth, isLoopbackAddress, type ApiKeyAuthOptions } from '../platform/api-key.js';
export { healthRoute, runHealth, type HealthCheck, type HealthProbe, type HealthReport, type HealthRouteOptions } from './health-route.js';
export { errorBody, type ErrorBody } from '../platform/error-body.js';
