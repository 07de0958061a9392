// Stands in for the abort-controller polyfill in dist/vendor/grammy.cjs: Node has had both classes built in since 15.
'use strict';
module.exports = { AbortController: globalThis.AbortController, AbortSignal: globalThis.AbortSignal, default: globalThis.AbortController };
