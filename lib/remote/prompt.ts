/**
 * The prompt's token ids from a llama-server's own tokenizer, split as the in-process
 * `tokenizePrompt` splits it: template text with special-token parsing, message text (the plan's
 * segments) without, BOS/EOS only on the first part. Sent to /completion as ids, so message text
 * can never become control tokens on the server either (a string prompt would be tokenized there
 * with special tokens parsed everywhere).
 */
import { LlamapegError } from "../errors.js";
import type { PromptInput } from "../openai/target.js";
import type { RemoteServer } from "./server.js";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface PromptPart {
  text: string;
  parseSpecial: boolean;
}

/** The prompt cut at its message segments (validated as the local tokenizer validates them). */
export function promptParts(prompt: PromptInput): PromptPart[] {
  const segments = prompt.segments ?? [];
  if (segments.length === 0) return [{ text: prompt.text, parseSpecial: true }];
  const bytes = encoder.encode(prompt.text);
  const parts: PromptPart[] = [];
  const push = (start: number, end: number, parseSpecial: boolean) => parts.push({ text: decoder.decode(bytes.subarray(start, end)), parseSpecial });
  let at = 0;
  for (const s of segments) {
    if (!Number.isInteger(s.start) || !Number.isInteger(s.end) || s.start < at || s.end < s.start || s.end > bytes.length) {
      throw new LlamapegError("ERR_INVALID_ARGUMENT", `prompt segments must be sorted, disjoint byte ranges inside the prompt (got ${s.start}-${s.end})`, { where: "prompt.segments" });
    }
    if (s.start > at) push(at, s.start, true);
    if (s.end > s.start) push(s.start, s.end, false);
    at = s.end;
  }
  if (at < bytes.length) push(at, bytes.length, true);
  return parts;
}

/** Tokenizes every part on `server` (in parallel) and joins the ids. */
export async function tokenizeRemotePrompt(server: RemoteServer, prompt: PromptInput, signal?: AbortSignal): Promise<number[]> {
  const parts = promptParts(prompt);
  const ids = await Promise.all(parts.map((p, i) => server.tokenize(p.text, { addSpecial: i === 0, parseSpecial: p.parseSpecial }, signal)));
  return ids.flat();
}
