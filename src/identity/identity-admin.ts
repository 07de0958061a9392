import type { AdminRefusal, AdminResult } from '../domain/admin-result.js';
import { StoreError } from '../domain/errors.js';
import type { ChannelAccount, User } from '../domain/model.js';
import type { ProfileSettings, ProfileUpdateResult } from '../domain/profile.js';
import type { IdentityEvent, NewAdminAction, Store } from '../domain/ports/store.js';
import { applyFlowStateEffects, parseUserState } from '../runtime/context/user-state.js';
import { updateUserState } from '../runtime/context/user-state-update.js';
import type { ProfileService } from './profile-service.js';
import { normalisePhone } from './phones.js';

/** What the admin may forget in the turn's caches after a change, so the next message follows it at once. */
export interface AdminCache {
  forgetAccount(channel: string, accountId: string): void;
  forgetState(userId: string): void;
}

export interface IdentityAdminOptions {
  readonly store: Store;
  readonly profiles: ProfileService;
  readonly cache: AdminCache;
  /** The roles `roles.definitions` names; a role outside them is refused. */
  readonly roleNames: readonly string[];
  /** Region for numbers written without a country code (`identity.phones.defaultRegion`). */
  readonly defaultRegion?: string | undefined;
  /**
   * The account namespace of each channel that has its own (`Channel.accountNamespace`, e.g. `telegram-bot` →
   * `telegram`): an account named by its channel's name is looked up under its namespace. A name not in it is taken
   * as a namespace itself.
   */
  readonly accountNamespaces?: ReadonlyMap<string, string>;
}

/** Who made an admin change, for the audit: the admin API's caller as far as the server knows it. */
export interface AdminActor {
  readonly remoteAddress?: string | undefined;
  readonly requestId?: string | undefined;
  /** Who acted: an operator account's name, or for the admin token the name its client passed on; `admin` when none. */
  readonly name?: string | undefined;
  /** The operator account that acted; absent for the admin token. */
  readonly operatorId?: string | undefined;
}

/** A user as the admin API shows them. */
export interface AdminUserView {
  readonly user: User;
  readonly accounts: readonly ChannelAccount[];
  readonly role: string | null;
  readonly profile: ProfileSettings;
  /** False while the user has no stored profile (the defaults and channel hints apply). */
  readonly profileStored: boolean;
  /**
   * Why some or all of the stored profile could not be read (the defaults stand in for it in every turn); the row is
   * kept as it is. With `profileUnreadable` none of it could: updates are refused until it is replaced.
   */
  readonly profileProblem?: string;
  readonly profileUnreadable?: true;
}

// Shared with the operator actions of src/admin, so they live in the domain.
export type { AdminRefusal, AdminResult } from '../domain/admin-result.js';

/**
 * The admin's view of identities: read a user (accounts, role, profile, audit), change their profile, phone and
 * role, and move an account to another user by hand. Every change is written to the identity audit with actor
 * `admin` in the same transaction as the change, and the turn's caches forget what changed.
 */
export class IdentityAdmin {
  readonly #options: IdentityAdminOptions;

  constructor(options: IdentityAdminOptions) {
    this.#options = options;
  }

  async user(userId: string): Promise<AdminUserView | undefined> {
    const { store, profiles } = this.#options;
    const user = await store.users.findById(userId);
    if (!user) return undefined;
    const [accounts, state, profile] = await Promise.all([store.users.listAccounts(userId), store.userState.get(userId), profiles.get(userId)]);
    return {
      user,
      accounts,
      role: parseUserState(state?.raw).state.role,
      profile: profile.settings,
      profileStored: profile.stored,
      ...(profile.problem === undefined ? {} : { profileProblem: profile.problem }),
      ...(profile.unreadable ? { profileUnreadable: true as const } : {}),
    };
  }

  /** The user behind a channel account; `channel` is the account's namespace, or a channel's name that maps to one. */
  async userOfAccount(channel: string, accountId: string): Promise<User | undefined> {
    return this.#options.store.users.findByAccount(this.#namespaceOf(channel), accountId);
  }

  /** The namespace accounts of `channel` are bound under: its own, when it is a channel's name that has one. */
  #namespaceOf(channel: string): string {
    return this.#options.accountNamespaces?.get(channel) ?? channel;
  }

  async events(userId: string, limit?: number): Promise<AdminResult<readonly IdentityEvent[]>> {
    if (!(await this.#options.store.users.findById(userId))) return notFound(userId);
    return { ok: true, value: await this.#options.store.identityEvents.listByUser(userId, limit) };
  }

  /**
   * Changes the fields `input` names (Palaver's spelling or the snake_case one). Refused as a conflict, changing
   * nothing, while the stored profile cannot be read at all: {@link replaceProfile} is the explicit way past it.
   */
  async updateProfile(userId: string, input: unknown, actor: AdminActor): Promise<AdminResult<ProfileSettings>> {
    const { store, profiles } = this.#options;
    if (!(await store.users.findById(userId))) return notFound(userId);
    const result = await profiles.update(userId, input);
    if (!result.ok && result.unreadable !== undefined) {
      const message = `The stored profile cannot be read (${result.unreadable}); it was kept as it is and nothing was changed. Replace it as a whole with PUT /admin/users/${userId}/profile.`;
      return { ok: false, error: { code: 'conflict', message } };
    }
    return this.#profileChanged(userId, input, result, actor, {});
  }

  /** Stores `input` as the user's whole profile, whatever is stored (a profile that cannot be read included). */
  async replaceProfile(userId: string, input: unknown, actor: AdminActor): Promise<AdminResult<ProfileSettings>> {
    const { store, profiles } = this.#options;
    if (!(await store.users.findById(userId))) return notFound(userId);
    return this.#profileChanged(userId, input, await profiles.replace(userId, input), actor, { replaced: true });
  }

  async #profileChanged(
    userId: string,
    input: unknown,
    result: ProfileUpdateResult,
    actor: AdminActor,
    extra: Record<string, unknown>,
  ): Promise<AdminResult<ProfileSettings>> {
    if (!result.ok) return { ok: false, error: { code: 'invalid', message: 'The profile update is invalid; nothing was changed.', fields: result.errors } };
    const fields = changedFields(input);
    await this.#options.store.transaction(async (tx) => {
      await tx.identityEvents.add({
        userId,
        kind: 'admin_change',
        actor: 'admin',
        details: { change: 'profile', ...extra, fields, ...actorDetails(actor) },
      });
      await tx.adminActions.record(operatorAction('profile', userId, actor, { ...extra, fields }));
    });
    return { ok: true, value: result.settings };
  }

  /** Sets the user's phone (verified: the admin vouches for it) or, with null, removes it. */
  async setPhone(userId: string, phone: string | null, actor: AdminActor): Promise<AdminResult<{ readonly phone: string | null }>> {
    const { store } = this.#options;
    let digits: string | null = null;
    if (phone !== null) {
      const normalised = await normalisePhone(phone, this.#options.defaultRegion, { plusOptional: true });
      if (!normalised.ok)
        return { ok: false, error: { code: 'invalid', message: normalised.message, fields: [{ path: 'phone', message: normalised.message }] } };
      digits = normalised.digits;
    }
    try {
      return await store.transaction(async (tx) => {
        if (!(await tx.users.findById(userId))) return notFound(userId);
        if (digits !== null) {
          const holder = await tx.users.findPhoneHolder(digits);
          if (holder && holder.user.id !== userId) {
            return {
              ok: false,
              error: {
                code: 'conflict',
                message: 'Another user holds that phone number; move their accounts with POST /admin/relink, or remove it from them first.',
                holderUserId: holder.user.id,
              },
            };
          }
        }
        await tx.users.setPhone(userId, digits, 'admin');
        await tx.identityEvents.add({
          userId,
          kind: 'admin_change',
          actor: 'admin',
          details: { change: digits === null ? 'phone_removed' : 'phone_set', ...actorDetails(actor) },
        });
        await tx.adminActions.record(operatorAction('phone', userId, actor, { change: digits === null ? 'phone_removed' : 'phone_set' }));
        return { ok: true, value: { phone: digits } };
      });
    } catch (error) {
      // A concurrent link took the number between our look and our write: the unique constraint decided.
      if (error instanceof StoreError && error.code === 'conflict')
        return { ok: false, error: { code: 'conflict', message: 'Another user took that phone number at the same moment; nothing was changed.' } };
      throw error;
    }
  }

  /** Sets the user's role (null: none, the default role applies); the Responses chain starts afresh with it. */
  async setRole(userId: string, role: string | null, actor: AdminActor): Promise<AdminResult<{ readonly role: string | null }>> {
    const { store, cache, roleNames } = this.#options;
    if (role !== null && !roleNames.includes(role)) {
      const known = roleNames.length > 0 ? roleNames.join(', ') : 'none are configured';
      return {
        ok: false,
        error: { code: 'invalid', message: `Unknown role "${role}" (known roles: ${known}).`, fields: [{ path: 'role', message: 'not a configured role' }] },
      };
    }
    const result = await store.transaction(async (tx): Promise<AdminResult<{ readonly role: string | null }>> => {
      if (!(await tx.users.findById(userId))) return notFound(userId);
      let from: string | null = null;
      await updateUserState(tx.userState, userId, (state) => {
        from = state.role;
        return { ...state, role, responseChainId: null };
      });
      await tx.identityEvents.add({ userId, kind: 'admin_change', actor: 'admin', details: { change: 'role', from, to: role, ...actorDetails(actor) } });
      await tx.adminActions.record(operatorAction('role', userId, actor, { from, to: role }));
      return { ok: true, value: { role } };
    });
    if (result.ok) cache.forgetState(userId);
    return result;
  }

  /**
   * Sets (or, with `null`, clears) one namespace of the user's flow state, as a tool's `ctx.setFlowState` would: how an
   * event outside the conversation (a cargo assigned, a document signed) puts the agent in a mode for the person's
   * next turns. The model sees it in the turn's service data. Another turn saving the state meanwhile is rebased, not
   * overwritten.
   */
  async setFlowState(
    userId: string,
    namespace: string,
    value: unknown,
    actor: AdminActor,
  ): Promise<AdminResult<{ readonly namespace: string; readonly state: unknown }>> {
    const { store, cache } = this.#options;
    const result = await store.transaction(async (tx): Promise<AdminResult<{ readonly namespace: string; readonly state: unknown }>> => {
      if (!(await tx.users.findById(userId))) return notFound(userId);
      let had = false;
      await updateUserState(tx.userState, userId, (state) => {
        had = namespace in state.flows;
        return applyFlowStateEffects(state, { flowState: { [namespace]: value } });
      });
      const change = value === null ? 'cleared' : had ? 'replaced' : 'set';
      await tx.identityEvents.add({
        userId,
        kind: 'admin_change',
        actor: 'admin',
        details: { change: 'flow_state', namespace, [change]: true, ...actorDetails(actor) },
      });
      await tx.adminActions.record(operatorAction('flow_state', userId, actor, { namespace, change }));
      return { ok: true, value: { namespace, state: value } };
    });
    if (result.ok) cache.forgetState(userId);
    return result;
  }

  /**
   * Moves a channel account, with its own conversations on the channels of its namespace (see
   * `UserRepository.relinkAccount`), to another user. `channel` is the account's namespace (`telegram`), or the name
   * of a channel that maps to one (`telegram-bot`); the audit records the namespace.
   */
  async relink(
    request: { readonly channel: string; readonly accountId: string; readonly toUserId: string },
    actor: AdminActor,
  ): Promise<AdminResult<{ readonly fromUserId: string; readonly toUserId: string }>> {
    const { store, cache } = this.#options;
    const input = { ...request, channel: this.#namespaceOf(request.channel) };
    const result = await store.transaction(async (tx): Promise<AdminResult<{ readonly fromUserId: string; readonly toUserId: string }>> => {
      const current = await tx.users.findByAccount(input.channel, input.accountId);
      if (!current) return { ok: false, error: { code: 'not_found', message: `There is no account ${input.accountId} on channel ${input.channel}.` } };
      if (!(await tx.users.findById(input.toUserId))) return notFound(input.toUserId);
      if (current.id === input.toUserId) return { ok: true, value: { fromUserId: current.id, toUserId: current.id } };
      await tx.users.relinkAccount({ channel: input.channel, accountId: input.accountId, userId: input.toUserId, carrySessions: true });
      await tx.identityEvents.add({
        userId: input.toUserId,
        kind: 'relink',
        channel: input.channel,
        accountId: input.accountId,
        fromUserId: current.id,
        toUserId: input.toUserId,
        actor: 'admin',
        details: actorDetails(actor),
      });
      await tx.adminActions.record(
        operatorAction('relink', input.toUserId, actor, { channel: input.channel, accountId: input.accountId, fromUserId: current.id }),
      );
      return { ok: true, value: { fromUserId: current.id, toUserId: input.toUserId } };
    });
    if (result.ok) {
      cache.forgetAccount(input.channel, input.accountId);
      cache.forgetState(result.value.fromUserId);
    }
    return result;
  }
}

function notFound(userId: string): { ok: false; error: AdminRefusal } {
  return { ok: false, error: { code: 'not_found', message: `There is no user ${userId}.` } };
}

/** The top-level fields an update named (values stay out of the audit: they are personal data). */
function changedFields(input: unknown): string[] {
  if (!input || typeof input !== 'object') return [];
  return Object.entries(input as Record<string, unknown>).flatMap(([key, value]) =>
    value && typeof value === 'object' && !Array.isArray(value) ? Object.keys(value).map((inner) => `${key}.${inner}`) : [key],
  );
}

/** The operators' audit row of an identity change (values that are personal data stay out, as in the identity audit). */
function operatorAction(
  action: 'profile' | 'phone' | 'role' | 'flow_state' | 'relink',
  userId: string,
  actor: AdminActor,
  details: Record<string, unknown>,
): NewAdminAction {
  return { action, actor: actor.name ?? 'admin', operatorId: actor.operatorId ?? null, requestId: actor.requestId ?? null, userId, details };
}

function actorDetails(actor: AdminActor): Record<string, string> {
  return { ...(actor.remoteAddress ? { remoteAddress: actor.remoteAddress } : {}), ...(actor.requestId ? { requestId: actor.requestId } : {}) };
}
