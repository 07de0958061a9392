import { z } from 'zod';

/** OpenAI-compatible /audio/transcriptions for voice and audio messages; defaults to the model's endpoint. */
export const transcriptionSchema = z.strictObject({
  baseUrl: z.url().optional(),
  apiKey: z.string().min(1).optional(),
  model: z.string().min(1).default('whisper-1'),
});

export type TranscriptionSettings = z.infer<typeof transcriptionSchema>;
