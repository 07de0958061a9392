import { describe, expect, it } from 'vitest';
import type { ModelInputItem } from '../../src/domain/ports/model-provider.js';
import { toChatMessages, toResponsesInput } from '../../src/models/index.js';

// A person's attached images on the wire of each API: beside their text, inline as data URLs; left out for a model
// configured without images, and for any image whose bytes were not loaded.

const input: ModelInputItem[] = [
  {
    type: 'message',
    role: 'user',
    content: 'Is this the right shoe?\n[image: shoe.png] [image: gone.png]',
    images: [
      { attachmentId: 'a1', mimeType: 'image/png', data: 'iVBORw0K' },
      { attachmentId: 'a2', mimeType: 'image/jpeg' },
    ],
  },
  { type: 'message', role: 'assistant', content: 'Yes.' },
];

describe('attached images on the wire', () => {
  it('go as Chat Completions image_url parts', () => {
    expect(toChatMessages('Be brief.', input)[1]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'Is this the right shoe?\n[image: shoe.png] [image: gone.png]' },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0K' } },
      ],
    });
  });

  it('go as Responses input_image parts', () => {
    expect(toResponsesInput(input)[0]).toEqual({
      type: 'message',
      role: 'user',
      content: [
        { type: 'input_text', text: 'Is this the right shoe?\n[image: shoe.png] [image: gone.png]' },
        { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0K', detail: 'auto' },
      ],
    });
  });

  it('stay out for a model without images: the text names them', () => {
    expect(toChatMessages('', input, false)[0]).toEqual({ role: 'user', content: 'Is this the right shoe?\n[image: shoe.png] [image: gone.png]' });
    expect(toResponsesInput(input, false)[0]).toEqual({
      type: 'message',
      role: 'user',
      content: 'Is this the right shoe?\n[image: shoe.png] [image: gone.png]',
    });
  });
});
