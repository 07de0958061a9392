import type { AttachmentRepository } from '../../domain/ports/store.js';
import type { ModelInputItem } from '../../domain/ports/model-provider.js';

/**
 * Images a model call carries at most: the newest ones, so that a conversation with many photos does not send them
 * all again with every call (each costs tokens and megabytes). Older ones are still named in their message's text.
 */
export const MAX_IMAGES_PER_CALL = 4;

/**
 * Fills the newest {@link MAX_IMAGES_PER_CALL} images of `items` with their bytes (base64) from the store; the other
 * images, and any whose bytes are gone, are left out. Items without images are returned as they are.
 */
export async function withImageData(items: readonly ModelInputItem[], attachments: Pick<AttachmentRepository, 'find'>): Promise<ModelInputItem[]> {
  const wanted: string[] = [];
  for (let i = items.length - 1; i >= 0 && wanted.length < MAX_IMAGES_PER_CALL; i--) {
    const item = items[i]!;
    if (item.type !== 'message' || item.images === undefined) continue;
    for (let j = item.images.length - 1; j >= 0 && wanted.length < MAX_IMAGES_PER_CALL; j--) wanted.push(item.images[j]!.attachmentId);
  }
  if (wanted.length === 0) return items.map(withoutImages);
  const found = new Map((await attachments.find(wanted)).map((file) => [file.id, Buffer.from(file.bytes).toString('base64')]));
  return items.map((item) => {
    if (item.type !== 'message' || item.images === undefined) return item;
    const images = item.images.flatMap((image) => {
      const data = found.get(image.attachmentId);
      return data === undefined ? [] : [{ ...image, data }];
    });
    const { images: _all, ...rest } = item;
    return images.length === 0 ? rest : { ...rest, images };
  });
}

function withoutImages(item: ModelInputItem): ModelInputItem {
  if (item.type !== 'message' || item.images === undefined) return item;
  const { images: _images, ...rest } = item;
  return rest;
}
