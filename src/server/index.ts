export { createHttpApp, DEFAULT_MAX_BODY_BYTES, type HttpAppOptions } from './http-app.js';
export { startHttpServer, type HttpServerOptions, type RunningHttpServer } from './http-server.js';
export { adminTokenAuth, apiKeyAuth, isLoopbackAddress, type ApiKeyAuthOptions } from './api-key.js';
export { healthRoute, runHealth, type HealthCheck, type HealthProbe, type HealthReport, type HealthRouteOptions } from './health-route.js';
export { errorBody, type ErrorBody } from './error-body.js';
