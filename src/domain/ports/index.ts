export type * from './store.js';
export type * from './model-provider.js';
export type * from './tool-host.js';
export type * from './tool-dispatch.js';
export type * from './channel.js';
export type * from './identity.js';
export type * from './flow.js';
export type * from './operator-queries.js';
