/**
 * Web input follows the rule every person's input follows: NUL and lone surrogates are refused (see
 * `domain/storable-text.ts` for why). Kept under this name for the web channel's public exports.
 */
export { unstorableReason as badTextReason } from '../../domain/storable-text.js';
