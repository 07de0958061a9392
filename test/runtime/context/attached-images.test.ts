import { describe, expect, it } from 'vitest';
import type { StoredAttachment } from '../../../src/domain/model.js';
import type { ModelInputItem } from '../../../src/domain/ports/model-provider.js';
import { MAX_IMAGES_PER_CALL, withImageData } from '../../../src/runtime/context/attached-images.js';

function photoMessage(id: string): ModelInputItem {
  return { type: 'message', role: 'user', content: `[image: ${id}.png]`, images: [{ attachmentId: id, mimeType: 'image/png' }] };
}

describe('attached images before a model call', () => {
  it('carry the bytes of the newest images only, and none whose bytes are gone', async () => {
    const asked: string[][] = [];
    const store = {
      async find(ids: readonly string[]): Promise<StoredAttachment[]> {
        asked.push([...ids]);
        return ids
          .filter((id) => id !== 'p5')
          .map((id) => ({
            id,
            sessionId: 's',
            kind: 'image',
            mimeType: 'image/png',
            name: `${id}.png`,
            size: 1,
            bytes: new Uint8Array([Number(id.slice(1))]),
          }));
      },
    };
    const items = ['p1', 'p2', 'p3', 'p4', 'p5', 'p6'].map(photoMessage);
    const filled = await withImageData(items, store);
    // One read, for the newest four (p5's bytes are gone).
    expect(asked).toEqual([['p6', 'p5', 'p4', 'p3']]);
    expect(MAX_IMAGES_PER_CALL).toBe(4);
    const images = filled.map((item) => (item.type === 'message' ? (item.images?.map((image) => image.data) ?? []) : []));
    expect(images).toEqual([[], [], ['Aw=='], ['BA=='], [], ['Bg==']]);
    // The text still names every image.
    expect(filled.map((item) => (item.type === 'message' ? item.content : ''))).toEqual(items.map((item) => (item.type === 'message' ? item.content : '')));
  });

  it('reads nothing when no message has an image', async () => {
    const store = {
      async find(): Promise<StoredAttachment[]> {
        throw new Error('no read expected');
      },
    };
    const items: ModelInputItem[] = [{ type: 'message', role: 'user', content: 'hi' }];
    expect(await withImageData(items, store)).toEqual(items);
  });
});
