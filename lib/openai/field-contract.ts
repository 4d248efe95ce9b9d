/**
 * A request-field contract as data, for the endpoints beside Chat Completions (Responses, Messages,
 * Completions): every field is honoured, accepted and ignored by design, or refused with a 400
 * naming it, and an unknown field is refused too. The same rule kinds as request-fields.ts.
 */
import { SAMPLING_REQUEST_KEYS } from "../llama/sampling-params.js";
import { invalidRequest } from "./errors.js";

export type FieldRule =
  /** Read by the endpoint's mapping. */
  | { kind: "honoured" }
  /** Accepted, no effect by design. */
  | { kind: "ignored"; why: string }
  /** Refused unless the value asks for nothing (the default). */
  | { kind: "unsupported"; why: string; neutral?: (v: unknown) => boolean };

export const honoured: FieldRule = { kind: "honoured" };
export const ignored = (why: string): FieldRule => ({ kind: "ignored", why });
export const unsupported = (why: string, neutral?: (v: unknown) => boolean): FieldRule => ({ kind: "unsupported", why, ...(neutral ? { neutral } : {}) });

/** Refuses unknown fields and fields that cannot be honoured (null is absent). `api` names the API in the message. */
export function checkFields(table: Readonly<Record<string, FieldRule>>, r: Record<string, unknown>, api: string): void {
  for (const [key, value] of Object.entries(r)) {
    if (value === undefined || value === null) continue;
    const rule = table[key];
    if (rule === undefined) invalidRequest(key, `unknown field (not a field of the ${api} API, nor a llama.cpp or llamapeg extension)`);
    if (rule.kind === "unsupported" && !(rule.neutral?.(value) ?? false)) invalidRequest(key, `not supported: ${rule.why}`);
  }
}

/** The Chat Completions sampling keys that are not OpenAI's own on every endpoint (llama.cpp's extensions, seed, the penalties). */
export const SAMPLING_EXTENSION_KEYS: readonly string[] = SAMPLING_REQUEST_KEYS.filter((k) => k !== "temperature" && k !== "top_p");

/** The sampling extensions every endpoint passes through to Chat Completions as they are. */
export const SAMPLING_EXTENSIONS: readonly string[] = [...SAMPLING_EXTENSION_KEYS, "chat_template", "chat_template_kwargs"];
