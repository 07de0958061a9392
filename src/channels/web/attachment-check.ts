/**
 * The types a person may attach on the web, each known by its bytes' signature: what a browser declares is only a
 * claim, so a file is taken for what its first bytes say it is. Plain text has no signature and is not among them.
 */
export const ATTACHMENT_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'application/pdf'] as const;

export type AttachmentType = (typeof ATTACHMENT_TYPES)[number];

/** Types a model may be shown as an image (OpenAI's image inputs take these four). */
const IMAGE_TYPES: ReadonlySet<string> = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** Longest file name kept; it is shown on the page and named to the model. */
const MAX_NAME_CHARS = 120;

/** The type the bytes' signature names, of those Palaver accepts; undefined for anything else. */
export function sniffType(bytes: Uint8Array): AttachmentType | undefined {
  const starts = (...signature: number[]): boolean => signature.every((byte, index) => bytes[index] === byte);
  const ascii = (from: number, text: string): boolean => [...text].every((char, index) => bytes[from + index] === char.charCodeAt(0));
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'image/png';
  if (starts(0xff, 0xd8, 0xff)) return 'image/jpeg';
  if (ascii(0, 'GIF87a') || ascii(0, 'GIF89a')) return 'image/gif';
  if (ascii(0, 'RIFF') && ascii(8, 'WEBP')) return 'image/webp';
  if (ascii(0, '%PDF-')) return 'application/pdf';
  return undefined;
}

/** Whether a type goes to the model as an image. */
export function isImageType(mimeType: string): boolean {
  return IMAGE_TYPES.has(mimeType);
}

/** What the web channel accepts (`channels.web.attachments`). */
export interface AttachmentRules {
  readonly types: readonly string[];
  readonly maxFileBytes: number;
  readonly maxFilesPerMessage: number;
}

/** One attached file as the client sent it: base64 bytes, the type it claims, and perhaps a name. */
export interface ClaimedAttachment {
  readonly base64: string;
  readonly mimeType: string;
  readonly name?: string | undefined;
}

/** A file that passed: its bytes, its type as its signature says, a name fit to show. */
export interface CheckedAttachment {
  readonly kind: 'image' | 'file';
  readonly mimeType: AttachmentType;
  readonly name: string;
  readonly size: number;
  readonly bytes: Uint8Array;
}

/** Why a file was refused; the message says what to change. */
export interface AttachmentProblem {
  readonly code: 'too_many_attachments' | 'attachment_too_large' | 'attachment_type';
  readonly status: 400 | 413 | 415;
  readonly message: string;
}

/**
 * Checks the files of one message against `rules`: how many, how large (counted on the decoded bytes, but refused
 * before decoding when the base64 alone is too long), and what they are (the signature must name an allowed type, and
 * the type the client declared must be that one). Returns the files, or the first problem.
 */
export function checkAttachments(files: readonly ClaimedAttachment[], rules: AttachmentRules): readonly CheckedAttachment[] | AttachmentProblem {
  if (files.length > rules.maxFilesPerMessage) {
    return {
      code: 'too_many_attachments',
      status: 400,
      message: `A message may carry at most ${rules.maxFilesPerMessage} files; ${files.length} were attached.`,
    };
  }
  const checked: CheckedAttachment[] = [];
  for (const [index, file] of files.entries()) {
    const label = file.name ? JSON.stringify(showableName(file.name, index)) : `File ${index + 1}`;
    // base64 is 4 characters per 3 bytes: a string this long cannot decode to an allowed size.
    if (Math.floor((file.base64.length * 3) / 4) - 2 > rules.maxFileBytes) return tooLarge(label, rules.maxFileBytes);
    const bytes = new Uint8Array(Buffer.from(file.base64, 'base64'));
    if (bytes.length > rules.maxFileBytes) return tooLarge(label, rules.maxFileBytes);
    const sniffed = sniffType(bytes);
    if (sniffed === undefined || !rules.types.includes(sniffed)) {
      return { code: 'attachment_type', status: 415, message: `${label} is not a file type this chat accepts (${rules.types.join(', ')}).` };
    }
    if (file.mimeType.toLowerCase() !== sniffed) {
      return { code: 'attachment_type', status: 415, message: `${label} says it is ${file.mimeType}, but its content is ${sniffed}; send the file as it is.` };
    }
    checked.push({ kind: isImageType(sniffed) ? 'image' : 'file', mimeType: sniffed, name: showableName(file.name, index), size: bytes.length, bytes });
  }
  return checked;
}

/** The file's name without any folder, control characters or NUL, cut to a length a page can show. */
export function showableName(name: string | undefined, index: number): string {
  const base = (name ?? '')
    .split(/[\\/]/)
    .pop()!
    .replace(/[\u0000-\u001f\u007f]/g, '')
    .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '')
    .trim();
  return base === '' ? `file-${index + 1}` : base.slice(0, MAX_NAME_CHARS);
}

function tooLarge(label: string, maxFileBytes: number): AttachmentProblem {
  return { code: 'attachment_too_large', status: 413, message: `${label} is larger than ${formatBytes(maxFileBytes)}, the most this chat accepts per file.` };
}

/** `5 MB`, `300 KB`: sizes as people read them. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MB`;
  return `${Math.max(1, Math.round(bytes / 1024))} KB`;
}
