/**
 * Prompt segments and their tokenization: message text never becomes control tokens.
 *
 * The renderer marks which characters of a prompt came from message values (lib/jinja/marks.ts).
 * Here the prompt is cut the way llama.cpp's tokenizer cuts it with special-token parsing on
 * (`tokenizer_st_partition`: control tokens, longest text first, each splitting the raw text
 * around it, LSTRIP/RSTRIP eating whitespace), except that a control token's text is matched only
 * where every character of it is template text. The raw stretches between control tokens, message
 * text included, are then tokenized as plain text, exactly as llama.cpp tokenizes the stretches
 * between special tokens. So a prompt whose messages hold no control-token text gets exactly the
 * tokens `tokenize(prompt, {parseSpecial: true})` gives, and `<|im_start|>` typed by a user stays
 * the characters `<`, `|`, `im`, ...
 *
 * User-defined added tokens (e.g. Qwen2.5's `<tool_call>`) are not control tokens: llama.cpp (and
 * Hugging Face tokenizers) match them in plain text too, and so do we.
 */
import { LlamapegError } from "../errors.js";
import type { Model } from "../llama/model.js";

/**
 * A stretch of a prompt that came from message values: `prompt.slice(start, end)` (UTF-16 code
 * units; `PromptByteSegment` in lib/openai/target.ts is the same stretch in UTF-8 bytes).
 */
export interface PromptTextSegment {
  start: number;
  end: number;
}

/** The same stretch as bytes [start, end) of the prompt's UTF-8 encoding (what llama-server's tokenizer cuts). */
export interface PromptByteSegment {
  start: number;
  end: number;
}

/** A token the tokenizer matches by its text when parsing special tokens (control or unknown). */
export interface SpecialToken {
  id: number;
  text: string;
  /** LLAMA_TOKEN_ATTR_LSTRIP / RSTRIP: whitespace before / after it is dropped. */
  lstrip: boolean;
  rstrip: boolean;
}

/** A prompt cut for tokenization: plain text to tokenize without special parsing, or a token. */
export type PromptFragment = { text: string } | { token: number };

/** The flattened `[s0, e0, s1, e1, ...]` marks of a render as segments. */
export function segmentsFromMarks(marks: readonly number[]): PromptTextSegment[] {
  const out: PromptTextSegment[] = [];
  for (let i = 0; i + 1 < marks.length; i += 2) out.push({ start: marks[i]!, end: marks[i + 1]! });
  return out;
}

/** Checks that `segments` are sorted, disjoint ranges inside a prompt of `length` code units. */
export function checkSegments(segments: readonly PromptTextSegment[], length: number): void {
  let last = 0;
  for (const [i, s] of segments.entries()) {
    if (!Number.isInteger(s?.start) || !Number.isInteger(s?.end) || s.start < last || s.end < s.start || s.end > length)
      throw new LlamapegError("ERR_INVALID_ARGUMENT", `prompt segment ${i} (${JSON.stringify(s)}) is not a sorted range inside the prompt (${length} characters)`, {
        where: `promptSegments[${i}]`,
      });
    last = s.end;
  }
}

/** The same segments as UTF-8 byte ranges of the prompt (for targets that take bytes, such as llama-server). */
export function segmentByteRanges(prompt: string, segments: readonly PromptTextSegment[]): PromptByteSegment[] {
  const out: PromptByteSegment[] = [];
  let unit = 0;
  let byte = 0;
  const advance = (to: number): void => {
    byte += Buffer.byteLength(prompt.slice(unit, to), "utf8");
    unit = to;
  };
  for (const s of segments) {
    advance(s.start);
    const start = byte;
    advance(s.end);
    out.push({ start, end: byte });
  }
  return out;
}

const isSpace = (c: number): boolean => c === 0x20 || (c >= 0x09 && c <= 0x0d);

/**
 * Whether the text of some special token overlaps message text anywhere in the prompt (starting
 * inside a message, or starting in template text and running into one): the fast path's test.
 */
export function messagesHoldSpecialText(prompt: string, segments: readonly PromptTextSegment[], specials: readonly SpecialToken[]): boolean {
  const byFirst = new Map<string, string[]>();
  let longest = 0;
  for (const t of specials) {
    if (t.text === "") continue;
    byFirst.set(t.text[0]!, [...(byFirst.get(t.text[0]!) ?? []), t.text]);
    longest = Math.max(longest, t.text.length);
  }
  if (longest === 0) return false;
  const hit = (i: number, s: PromptTextSegment, candidates: readonly string[]): boolean => {
    for (const text of candidates) if (i + text.length > s.start && prompt.startsWith(text, i)) return true;
    return false;
  };
  for (const s of segments) {
    if (s.end <= s.start) continue;
    const from = Math.max(0, s.start - longest + 1);
    if (byFirst.size <= 16) {
      // few first characters (the usual `<`, `[`): indexOf skips to each one instead of visiting
      // every character (a 7.5 MiB message: ~50 ms on the server's event loop before)
      for (const [first, candidates] of byFirst) {
        for (let i = prompt.indexOf(first, from); i >= 0 && i < s.end; i = prompt.indexOf(first, i + 1)) if (hit(i, s, candidates)) return true;
      }
      continue;
    }
    for (let i = from; i < s.end; i++) {
      const candidates = byFirst.get(prompt[i]!);
      if (candidates !== undefined && hit(i, s, candidates)) return true;
    }
  }
  return false;
}

/**
 * Cuts `prompt` like llama.cpp's special-token partition, matching special tokens only where
 * they lie wholly outside `segments`.
 */
export function partitionPrompt(prompt: string, segments: readonly PromptTextSegment[], specials: readonly SpecialToken[]): PromptFragment[] {
  checkSegments(segments, prompt.length);
  // whether [start, end) overlaps a message (binary search over the sorted segments)
  const inMessage = (start: number, end: number): boolean => {
    let lo = 0;
    let hi = segments.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (segments[mid]!.end <= start) lo = mid + 1;
      else hi = mid;
    }
    const s = segments[lo];
    return s !== undefined && s.start < end && s.end > start && s.end > s.start;
  };
  type Frag = { raw: true; start: number; end: number } | { raw: false; token: number };
  let frags: Frag[] = [{ raw: true, start: 0, end: prompt.length }];
  // longest text first, as llama.cpp sorts its special-token cache
  const order = [...specials].filter((t) => t.text !== "").sort((a, b) => b.text.length - a.text.length || a.id - b.id);
  for (const t of order) {
    const next: Frag[] = [];
    for (const f of frags) {
      if (!f.raw) {
        next.push(f);
        continue;
      }
      let base = f.start;
      let from = f.start;
      for (;;) {
        const at = prompt.indexOf(t.text, from);
        if (at < 0 || at + t.text.length > f.end) break;
        if (inMessage(at, at + t.text.length)) {
          from = at + 1;
          continue;
        }
        let leftEnd = at;
        if (t.lstrip) while (leftEnd > base && isSpace(prompt.charCodeAt(leftEnd - 1))) leftEnd--;
        if (leftEnd > base) next.push({ raw: true, start: base, end: leftEnd });
        next.push({ raw: false, token: t.id });
        base = at + t.text.length;
        if (t.rstrip) while (base < f.end && isSpace(prompt.charCodeAt(base))) base++;
        from = base;
      }
      if (base < f.end) next.push({ raw: true, start: base, end: f.end });
    }
    frags = next;
  }
  return frags.map((f) => (f.raw ? { text: prompt.slice(f.start, f.end) } : { token: f.token }));
}

// llama_token_attr bits (llama.h)
const ATTR_UNKNOWN = 1 << 0;
const ATTR_CONTROL = 1 << 3;
const ATTR_LSTRIP = 1 << 7;
const ATTR_RSTRIP = 1 << 8;

interface ModelTokenInfo {
  specials: SpecialToken[];
  /** What `addSpecial` adds around a text (BOS, EOS, CLS/SEP...). */
  prefix: number[];
  suffix: number[];
}

const infoCache = new WeakMap<Model, ModelTokenInfo>();
const decoder = new TextDecoder();

/** The model's control and unknown tokens, and what `addSpecial` adds; computed once per model. */
export function modelTokenInfo(model: Model): ModelTokenInfo {
  const hit = infoCache.get(model);
  if (hit) return hit;
  const specials: SpecialToken[] = [];
  for (let id = 0; id < model.vocabSize; id++) {
    const attr = model.tokenAttributes(id);
    if ((attr & (ATTR_CONTROL | ATTR_UNKNOWN)) === 0) continue;
    const text = decoder.decode(model.tokenPiece(id, { special: true }));
    // an unknown token renders as "▅", not its text: llama.cpp still matches its text, which we do not know
    if ((attr & ATTR_UNKNOWN) !== 0 && (attr & ATTR_CONTROL) === 0 && text === "\u2585") continue;
    specials.push({ id, text, lstrip: (attr & ATTR_LSTRIP) !== 0, rstrip: (attr & ATTR_RSTRIP) !== 0 });
  }
  const probe = "a";
  const bare = Array.from(model.tokenize(probe, { addSpecial: false, parseSpecial: false }));
  const full = Array.from(model.tokenize(probe, { addSpecial: true, parseSpecial: false }));
  let at = 0;
  while (at + bare.length <= full.length && !bare.every((t, i) => full[at + i] === t)) at++;
  const info: ModelTokenInfo = at + bare.length <= full.length
    ? { specials, prefix: full.slice(0, at), suffix: full.slice(at + bare.length) }
    : { specials, prefix: [], suffix: [] };
  infoCache.set(model, info);
  return info;
}

export interface TokenizePromptOptions {
  /** Add BOS/EOS as the model's tokenizer says. Default true. */
  addSpecial?: boolean;
  /**
   * Parse special-token text inside message text too (llama-server's behaviour, and this
   * library's before segments existed). Default false.
   */
  specialTokensInMessages?: boolean;
  /** Always cut the prompt in TypeScript, even when no message holds special-token text (tests). */
  forcePartition?: boolean;
}

/**
 * Tokenizes a chat prompt with special-token parsing only in template text. `segments`: the
 * plan's `promptSegments` (message text); none means the whole prompt is template text.
 */
export function tokenizeChatPrompt(model: Model, prompt: string, segments: readonly PromptTextSegment[] | undefined, options: TokenizePromptOptions = {}): Int32Array {
  const addSpecial = options.addSpecial ?? true;
  const segs = segments ?? [];
  if (options.specialTokensInMessages === true || segs.length === 0) return model.tokenize(prompt, { addSpecial, parseSpecial: true });
  checkSegments(segs, prompt.length);
  const info = modelTokenInfo(model);
  // the common case: nothing to protect, so llama.cpp's own tokenization in one call
  if (options.forcePartition !== true && !messagesHoldSpecialText(prompt, segs, info.specials))
    return model.tokenize(prompt, { addSpecial, parseSpecial: true });
  const out: number[] = addSpecial ? [...info.prefix] : [];
  for (const f of partitionPrompt(prompt, segs, info.specials)) {
    if ("token" in f) out.push(f.token);
    else for (const t of model.tokenize(f.text, { addSpecial: false, parseSpecial: false })) out.push(t);
  }
  if (addSpecial) out.push(...info.suffix);
  return Int32Array.from(out);
}

/**
 * `tokenizeChatPrompt` without blocking the event loop on a large prompt: the tokenizer runs on a
 * native thread (`model.tokenizeAsync`) wherever a stretch is long.
 */
export async function tokenizeChatPromptAsync(
  model: Model,
  prompt: string,
  segments: readonly PromptTextSegment[] | undefined,
  options: TokenizePromptOptions = {},
): Promise<Int32Array> {
  const addSpecial = options.addSpecial ?? true;
  const segs = segments ?? [];
  if (options.specialTokensInMessages === true || segs.length === 0) return model.tokenizeAsync(prompt, { addSpecial, parseSpecial: true });
  checkSegments(segs, prompt.length);
  const info = modelTokenInfo(model);
  if (options.forcePartition !== true && !messagesHoldSpecialText(prompt, segs, info.specials))
    return model.tokenizeAsync(prompt, { addSpecial, parseSpecial: true });
  const out: number[] = addSpecial ? [...info.prefix] : [];
  for (const f of partitionPrompt(prompt, segs, info.specials)) {
    if ("token" in f) out.push(f.token);
    else for (const t of await model.tokenizeAsync(f.text, { addSpecial: false, parseSpecial: false })) out.push(t);
  }
  if (addSpecial) out.push(...info.suffix);
  return Int32Array.from(out);
}
