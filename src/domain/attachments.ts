import type { AttachmentRef } from './model.js';

/**
 * The attachment references kept in a message's `meta.attachments` (or an inbox row), read back: items that are not
 * a well-formed reference are left out, so a hand-edited or older row cannot break a turn or a transcript.
 */
export function readAttachmentRefs(value: unknown): AttachmentRef[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((item: unknown): AttachmentRef[] => {
    if (typeof item !== 'object' || item === null) return [];
    const { id, kind, mimeType, name, size } = item as Record<string, unknown>;
    if (typeof id !== 'string' || (kind !== 'image' && kind !== 'file') || typeof mimeType !== 'string' || typeof name !== 'string') return [];
    if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) return [];
    return [{ id, kind, mimeType, name, size }];
  });
}

/**
 * How a message's attachments are named to the model, after its text: `[image: cat.png]`, `[file: offer.pdf,
 * application/pdf, 120 KB]`. A model that sees images gets the image too; the name tells every model a file came.
 */
export function describeAttachments(refs: readonly AttachmentRef[]): string {
  return refs
    .map((ref) => (ref.kind === 'image' ? `[image: ${ref.name}]` : `[file: ${ref.name}, ${ref.mimeType}, ${Math.max(1, Math.round(ref.size / 1024))} KB]`))
    .join(' ');
}
