export { AguiTranslator, INTERNAL_ERROR_CODE, type AguiRunRef } from './agui-translator.js';
export {
  parseAguiInput,
  readCorrelationHeader,
  readLanguageHint,
  WEB_CHANNEL,
  type AguiInputOptions,
  type AguiInputProblem,
  type AguiInputResult,
} from './agui-input.js';
