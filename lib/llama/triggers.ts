/**
 * Lazy-grammar triggers mapped onto a vocabulary: the one mapping both targets use (the local
 * one, lib/openai/target.ts and `GrammarOptions.triggerWords`, and llama-server's,
 * lib/remote/backend.ts). llama.cpp's `common_chat_params` triggers become what its sampler takes
 * (`llama_sampler_init_grammar_lazy_patterns`): a word that is one control token triggers as that
 * token and is kept whole; other words are escaped text patterns (they match however the model
 * tokenizes them); `pattern_full` is an anchored pattern; a token trigger by text is its id when
 * the text is one token, else a word.
 */
import { BoundedCache, registerCache } from "../cache.js";
import type { Model } from "./model.js";

/** A grammar trigger as a plan gives it (llama.cpp's `common_grammar_trigger` kinds). */
export type GrammarTrigger =
  | { type: "word"; value: string }
  | { type: "token"; value: string; token?: number }
  | { type: "pattern"; value: string }
  | { type: "pattern_full"; value: string };

/** What the mapping asks of a vocabulary. */
export interface TriggerVocabulary {
  /** The id when `text` is exactly one token (special-token parsing on), else null. */
  singleToken(text: string): number | null;
  /** Whether `id` (the single token of `text`) is a control token: one that plain text cannot give. */
  isControl(id: number, text: string): boolean;
}

/** The same questions answered remotely (llama-server's /tokenize). */
export interface AsyncTriggerVocabulary {
  singleToken(text: string): Promise<number | null>;
  isControl(id: number, text: string): Promise<boolean>;
}

/** One trigger as a sampler takes it: a regex (ECMAScript / std::regex) over the output, or a token id (with the text it came from). */
export type MappedTrigger = { pattern: string } | { token: number; text: string };

export interface MappedTriggers {
  /** In the plan's order (llama-server takes them as one list). */
  triggers: MappedTrigger[];
  /** The patterns of `triggers`, in order. */
  patterns: string[];
  /** The token ids of `triggers`, in order. */
  tokens: number[];
  /** Words that became token triggers: their texts and ids, to keep whole in pieces. */
  preserve: { text: string; id: number }[];
}

/** Escapes a literal for an ECMAScript / std::regex pattern. */
export function escapeRegex(text: string): string {
  return text.replace(/[.^$|()*+?[\]{}\\]/g, "\\$&");
}

const anchored = (p: string): string => `${p.startsWith("^") ? "" : "^"}${p}${p.endsWith("$") ? "" : "$"}`;

/** The triggers as patterns and token ids of `vocab`, in the plan's order. */
export function mapTriggers(triggers: readonly GrammarTrigger[], vocab: TriggerVocabulary): MappedTriggers {
  const out: MappedTriggers = { triggers: [], patterns: [], tokens: [], preserve: [] };
  const pattern = (p: string): void => {
    out.triggers.push({ pattern: p });
    out.patterns.push(p);
  };
  const token = (id: number, text: string): void => {
    out.triggers.push({ token: id, text });
    out.tokens.push(id);
  };
  const word = (text: string): void => {
    const id = vocab.singleToken(text);
    if (id !== null && vocab.isControl(id, text)) {
      token(id, text);
      if (!out.preserve.some((p) => p.id === id)) out.preserve.push({ text, id });
    } else {
      pattern(escapeRegex(text));
    }
  };
  for (const t of triggers) {
    switch (t.type) {
      case "word":
        word(t.value);
        break;
      case "pattern":
        pattern(t.value);
        break;
      case "pattern_full":
        pattern(anchored(t.value));
        break;
      case "token": {
        const id = t.token ?? vocab.singleToken(t.value);
        if (id !== null) token(id, t.value);
        else word(t.value);
        break;
      }
    }
  }
  return out;
}

/** `mapTriggers` over a vocabulary asked asynchronously: every text is looked up once, all at once. */
export async function mapTriggersAsync(triggers: readonly GrammarTrigger[], vocab: AsyncTriggerVocabulary): Promise<MappedTriggers> {
  const texts = [...new Set(triggers.filter((t) => t.type === "word" || (t.type === "token" && t.token === undefined)).map((t) => t.value))];
  const singles = new Map(await Promise.all(texts.map(async (text) => [text, await vocab.singleToken(text)] as const)));
  const words = new Set(triggers.filter((t) => t.type === "word" || (t.type === "token" && t.token === undefined && singles.get(t.value) === null)).map((t) => t.value));
  const control = new Map(
    await Promise.all(
      [...words].flatMap((text) => {
        const id = singles.get(text) ?? null;
        return id === null ? [] : [vocab.isControl(id, text).then((c) => [text, c] as const)];
      }),
    ),
  );
  return mapTriggers(triggers, { singleToken: (text) => singles.get(text) ?? null, isControl: (_id, text) => control.get(text) === true });
}

/**
 * Per model, held weakly (a model no longer referenced takes its entry with it): text -> its token
 * id when it is one token, else null; the SINGLE_TOKENS texts used last (trigger words hold tool names).
 */
const SINGLE_TOKENS = 1024;
let singleTokens = new WeakMap<Model, BoundedCache<string, number | null>>();
// a WeakMap cannot be emptied: clearCaches replaces it
registerCache({ clear: () => void (singleTokens = new WeakMap()) });

/** A local model's vocabulary for `mapTriggers` (single-token lookups cached per model). */
export function modelVocabulary(model: Model): TriggerVocabulary {
  return { singleToken: (text) => singleToken(model, text), isControl: (id) => model.isSpecial(id) };
}

/** `text`'s token id when it is one token of `model` (special-token parsing on), else null. */
export function singleToken(model: Model, text: string): number | null {
  let known = singleTokens.get(model);
  if (known === undefined) singleTokens.set(model, (known = new BoundedCache(SINGLE_TOKENS)));
  return known.getOrSet(text, () => {
    const ids = model.tokenize(text, { addSpecial: false, parseSpecial: true });
    return ids.length === 1 ? ids[0]! : null;
  });
}
