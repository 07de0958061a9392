import type { Selectable } from 'kysely';
import { readAttachmentRefs } from '../../domain/attachments.js';
import type { AttachmentRef, StoredAttachment } from '../../domain/model.js';
import type { AttachmentRepository } from '../../domain/ports/store.js';
import type { RepositoryContext } from './repository-context.js';
import type { AttachmentsTable } from './schema.js';
import { storeOperation } from './store-errors.js';

/** Files attached to inbound messages, with their bytes (see the port). */
export class KyselyAttachmentRepository implements AttachmentRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  add(
    owner: { readonly channel: string; readonly accountId: string; readonly sessionId: string; readonly inboundId: string },
    files: readonly (AttachmentRef & { readonly bytes: Uint8Array })[],
  ): Promise<void> {
    return storeOperation('attachments.add', async () => {
      if (files.length === 0) return;
      const now = this.#ctx.now();
      await this.#ctx.db
        .insertInto('attachments')
        .values(
          files.map((file) => ({
            id: file.id,
            channel: owner.channel,
            account_id: owner.accountId,
            session_id: owner.sessionId,
            inbound_id: owner.inboundId,
            kind: file.kind,
            mime_type: file.mimeType,
            name: file.name,
            size: file.size,
            // Every driver takes a Buffer for a BLOB / bytea.
            bytes: Buffer.from(file.bytes.buffer, file.bytes.byteOffset, file.bytes.byteLength),
            created_at: now,
          })),
        )
        .execute();
    });
  }

  storedBytes(channel: string, accountId: string): Promise<number> {
    return storeOperation('attachments.storedBytes', async () => {
      const row = await this.#ctx.db
        .selectFrom('attachments')
        .select((eb) => eb.fn.sum<number | string | null>('size').as('total'))
        .where('channel', '=', channel)
        .where('account_id', '=', accountId)
        .executeTakeFirst();
      return Number(row?.total ?? 0);
    });
  }

  find(ids: readonly string[], sessionId?: string): Promise<StoredAttachment[]> {
    return storeOperation('attachments.find', async () => {
      if (ids.length === 0) return [];
      let query = this.#ctx.db
        .selectFrom('attachments')
        .selectAll()
        .where('id', 'in', [...ids]);
      if (sessionId !== undefined) query = query.where('session_id', '=', sessionId);
      return (await query.execute()).map(toStoredAttachment);
    });
  }
}

/** The references an inbox row keeps (JSON text), read back. */
export function parseAttachmentRefs(json: string): AttachmentRef[] {
  try {
    return readAttachmentRefs(JSON.parse(json));
  } catch {
    return [];
  }
}

function toStoredAttachment(row: Selectable<AttachmentsTable>): StoredAttachment {
  return {
    id: row.id,
    sessionId: row.session_id,
    kind: row.kind === 'image' ? 'image' : 'file',
    mimeType: row.mime_type,
    name: row.name,
    size: Number(row.size),
    bytes: new Uint8Array(row.bytes),
  };
}
