export { WebChannel, type WebChannelOptions } from './web-channel.js';
export {
  AguiTranslator,
  DISCARD_EVENT_NAME,
  INTERNAL_ERROR_CODE,
  REACTION_EVENT_NAME,
  TYPING_EVENT_NAME,
  type AguiRunIds,
  type AguiRunRef,
} from './agui-translator.js';
export { chatPageRoutes, DEFAULT_WEB_DIR } from './chat-page.js';
export {
  parseAguiInput,
  readCorrelationHeader,
  readLanguageHint,
  WEB_CHANNEL,
  type AguiInputOptions,
  type AguiInputProblem,
  type AguiInputResult,
} from './agui-input.js';
export {
  WebIdentity,
  VISITOR_COOKIE,
  SECURE_VISITOR_COOKIE,
  USER_TOKEN_HEADER,
  isHttps,
  visitorCookieName,
  type UserTokenOptions,
  type WebCaller,
  type WebIdentityOptions,
} from './web-identity.js';
export { RequestGuard, isBrowserRequest, type RequestGuardOptions } from './request-guard.js';
export { badTextReason } from './text-check.js';
