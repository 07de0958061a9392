/** What an admin action (identity changes, operator actions) answers: its value, or why it was refused. */
export type AdminResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: AdminRefusal };

/** Why an admin change was refused; the HTTP layer maps each to a status. */
export type AdminRefusal =
  | { readonly code: 'not_found'; readonly message: string }
  | { readonly code: 'invalid'; readonly message: string; readonly fields?: readonly { readonly path: string; readonly message: string }[] }
  | { readonly code: 'conflict'; readonly message: string; readonly holderUserId?: string; readonly assignedTo?: string };
