// Stands in for node-fetch in dist/vendor/grammy.cjs: grammY's Node build requires it at load, though Palaver hands
// grammY its own fetch. Node's global fetch serves the one other use (an InputFile made from a URL).
'use strict';
const fetch = (...args) => globalThis.fetch(...args);
module.exports = fetch;
module.exports.default = fetch;
