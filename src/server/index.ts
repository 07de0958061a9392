export { createHttpApp, type HttpAppOptions } from './http-app.js';
export { startHttpServer, type HttpServerOptions, type RunningHttpServer } from './http-server.js';
export { aguiRoute, type AguiRouteOptions } from './agui-route.js';
export { apiKeyAuth, isLoopbackAddress, type ApiKeyAuthOptions } from './api-key.js';
export { healthRoute, runHealth, type HealthCheck, type HealthProbe, type HealthReport, type HealthRouteOptions } from './health-route.js';
export { mountChatPage, DEFAULT_WEB_DIR } from './chat-page.js';
export { errorBody, type ErrorBody } from './error-body.js';
