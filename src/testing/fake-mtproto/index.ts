export {
  FakeMtproto,
  SERVICE_USER_ID,
  accessHashOf,
  type FakeIncomingContent,
  type FakeMethodHandler,
  type FakeMtprotoCall,
  type FakeMtprotoMessage,
  type FakeMtprotoOptions,
  type FakeMtprotoUser,
  type FakeReaction,
  type FakeRead,
  type FakeRpcError,
  type FakeTyping,
} from './fake-mtproto.js';
export { fakeMtprotoLink, type FakeMtprotoLink } from './link.js';
export { remoteFakeMtprotoLink } from './remote-link.js';
export { serveFakeMtproto, type FakeMtprotoServer } from './http-server.js';
export { createFakeClient, fakeClientOptions, type FakeClientOptions } from './fake-client.js';
export { signInSessionFile } from './session-file.js';
