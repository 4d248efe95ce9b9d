/**
 * The prompt's token ids from a llama-server's own tokenizer, as the in-process
 * `tokenizeChatPrompt` (lib/chat/prompt.ts) gives them: llama.cpp's tokenization with special
 * tokens parsed, except that a control token whose text overlaps message text is not one. Sent to
 * /completion as ids, so message text never becomes control tokens on the server either (a string
 * prompt would be tokenized there with special tokens parsed everywhere).
 *
 * llama-server does not list its vocabulary, so the control tokens are found from the prompt:
 * 1. `W` = the prompt tokenized with special tokens parsed (with pieces), aligned to the prompt's
 *    bytes (whitespace a control token strips, LSTRIP/RSTRIP, belongs to no token).
 * 2. A control token is one that text without special-token parsing can never give: ids of `W`
 *    absent from the prompt tokenized without special parsing are checked one by one (their text
 *    tokenized plainly is not that one id), cached per server.
 * 3. No control token overlaps a message: `W` is the answer (the common case: two /tokenize calls).
 *    Otherwise the control tokens wholly in template text stay, and the text between them is
 *    tokenized without special parsing, stretch by stretch, as llama.cpp tokenizes the text
 *    between special tokens.
 * Where `W` cannot be aligned (a tokenizer whose pieces are not the text, e.g. SPM's added leading
 * space), each segment is checked on its own, and a message holding control text is tokenized
 * per template/message part: message text stays plain, but the ids may differ from in-process at
 * the part boundaries.
 */
import { segmentByteRanges } from "../chat/prompt.js";
import { LlamapegError } from "../errors.js";
import type { PromptInput, PromptByteSegment } from "../openai/target.js";
import type { RemoteServer } from "./server.js";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The message ranges in bytes: `segments` as given, else the UTF-16 `textSegments` converted. */
function byteSegmentsOf(prompt: PromptInput): readonly PromptByteSegment[] {
  if (prompt.segments !== undefined) return prompt.segments;
  return prompt.textSegments === undefined ? [] : segmentByteRanges(prompt.text, prompt.textSegments);
}

export interface PromptPart {
  text: string;
  parseSpecial: boolean;
}

function checkSegments(segments: readonly PromptByteSegment[], size: number): void {
  let at = 0;
  for (const s of segments) {
    if (!Number.isInteger(s.start) || !Number.isInteger(s.end) || s.start < at || s.end < s.start || s.end > size) {
      throw new LlamapegError("ERR_INVALID_ARGUMENT", `prompt segments must be sorted, disjoint byte ranges inside the prompt (got ${s.start}-${s.end})`, { where: "prompt.segments" });
    }
    at = s.end;
  }
}

/** The prompt cut at its message segments: template parts parse special tokens, message parts do not. */
export function promptParts(prompt: PromptInput): PromptPart[] {
  const segments = byteSegmentsOf(prompt);
  if (segments.length === 0) return [{ text: prompt.text, parseSpecial: true }];
  const bytes = encoder.encode(prompt.text);
  checkSegments(segments, bytes.length);
  const parts: PromptPart[] = [];
  const push = (start: number, end: number, parseSpecial: boolean) => parts.push({ text: decoder.decode(bytes.subarray(start, end)), parseSpecial });
  let at = 0;
  for (const s of segments) {
    if (s.start > at) push(at, s.start, true);
    if (s.end > s.start) push(s.start, s.end, false);
    at = s.end;
  }
  if (at < bytes.length) push(at, bytes.length, true);
  return parts;
}

const isSpace = (b: number): boolean => b === 0x20 || (b >= 0x09 && b <= 0x0d);

interface Placed {
  id: number;
  piece: Uint8Array;
  start: number;
  end: number;
}

/** Places each token's piece on the prompt's bytes, skipping whitespace a control token stripped; null if they do not line up. */
export function alignPieces(bytes: Uint8Array, tokens: readonly { id: number; piece: Uint8Array }[]): Placed[] | null {
  const out: Placed[] = [];
  let at = 0;
  const matches = (p: Uint8Array, from: number) => from + p.length <= bytes.length && p.every((b, i) => bytes[from + i] === b);
  for (const t of tokens) {
    let from = at;
    while (!matches(t.piece, from) && from < bytes.length && isSpace(bytes[from]!)) from++;
    if (!matches(t.piece, from)) return null;
    out.push({ id: t.id, piece: t.piece, start: from, end: from + t.piece.length });
    at = from + t.piece.length;
  }
  while (at < bytes.length && isSpace(bytes[at]!)) at++;
  return at === bytes.length ? out : null;
}

const overlaps = (segments: readonly PromptByteSegment[], start: number, end: number): boolean => segments.some((s) => s.end > s.start && s.start < end && s.end > start);

/** Token ids of the prompt on `server`, as in-process (see the module comment). */
export async function tokenizeRemotePrompt(server: RemoteServer, prompt: PromptInput, signal?: AbortSignal): Promise<number[]> {
  const segments = byteSegmentsOf(prompt);
  if (segments.length === 0) return server.tokenize(prompt.text, { addSpecial: true, parseSpecial: true }, signal);
  const bytes = encoder.encode(prompt.text);
  checkSegments(segments, bytes.length);
  const [affix, withPieces, plain] = await Promise.all([
    server.specialAffixes(signal),
    server.tokenizeWithPieces(prompt.text, signal),
    server.tokenize(prompt.text, { addSpecial: false, parseSpecial: false }, signal),
  ]);
  const placed = alignPieces(bytes, withPieces);
  if (placed === null) return perPart(server, prompt, signal);
  const plainIds = new Set(plain);
  // Which ids of W are control tokens: only those text cannot produce need a look.
  const candidates = [...new Map(placed.filter((t) => !plainIds.has(t.id)).map((t) => [t.id, t.piece])).entries()];
  const control = new Set<number>();
  await Promise.all(
    candidates.map(async ([id, piece]) => {
      if (await server.isControl(id, decoder.decode(piece), signal)) control.add(id);
    }),
  );
  const inMessages = placed.filter((t) => control.has(t.id) && overlaps(segments, t.start, t.end));
  const ids = (list: Placed[]) => list.map((t) => t.id);
  if (inMessages.length === 0) return [...affix.prefix, ...ids(placed), ...affix.suffix];
  // Keep the control tokens wholly in template text; tokenize the rest plainly, stretch by stretch.
  // Whitespace next to a kept token that W placed in no token was stripped by it (LSTRIP/RSTRIP).
  const parts: Promise<number[]>[] = [];
  const plainText = (from: number, to: number) => server.tokenize(decoder.decode(bytes.subarray(from, to)), { addSpecial: false, parseSpecial: false }, signal);
  let at = 0;
  placed.forEach((t, i) => {
    if (!control.has(t.id) || overlaps(segments, t.start, t.end)) return;
    const stretchEnd = Math.max(at, i > 0 ? placed[i - 1]!.end : 0);
    if (stretchEnd > at) parts.push(plainText(at, stretchEnd));
    parts.push(Promise.resolve([t.id]));
    at = i + 1 < placed.length ? placed[i + 1]!.start : bytes.length;
  });
  if (at < bytes.length) parts.push(plainText(at, bytes.length));
  return [...affix.prefix, ...(await Promise.all(parts)).flat(), ...affix.suffix];
}

/** The fallback without aligned pieces: each part on its own (message parts without special parsing). */
async function perPart(server: RemoteServer, prompt: PromptInput, signal?: AbortSignal): Promise<number[]> {
  const parts = promptParts(prompt);
  const messages = parts.filter((p) => !p.parseSpecial);
  // No message holds control-token text: llama.cpp's tokenization of the whole prompt is the answer.
  const held = await Promise.all(
    messages.map(async (p) => {
      const [a, b] = await Promise.all([server.tokenize(p.text, { addSpecial: false, parseSpecial: true }, signal), server.tokenize(p.text, { addSpecial: false, parseSpecial: false }, signal)]);
      return a.length !== b.length || a.some((t, i) => t !== b[i]);
    }),
  );
  if (!held.includes(true)) return server.tokenize(prompt.text, { addSpecial: true, parseSpecial: true }, signal);
  const ids = await Promise.all(parts.map((p, i) => server.tokenize(p.text, { addSpecial: i === 0, parseSpecial: p.parseSpecial }, signal)));
  return ids.flat();
}
