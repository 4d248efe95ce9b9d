/**
 * POST /tokenize and POST /detokenize in llama-server's shapes (tools/server: `handle_tokenize`,
 * `handle_detokenize`): `{content, add_special = false, parse_special = true, with_pieces = false}`
 * -> `{tokens}` (with pieces: `[{id, piece}]`, the piece a string when it is whole UTF-8, else its
 * bytes); `{tokens}` -> `{content}`. They need the model's tokenizer: a server over remote targets
 * answers 501.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

import type { Model } from "../llama/model.js";
import { invalidRequest } from "../openai/errors.js";
import { checkFields, honoured } from "../openai/field-contract.js";
import { readJsonRequest, type RouteContext } from "./chat-run.js";
import { HttpError } from "./http-error.js";
import { sendJson } from "./respond.js";

/** The local model behind a target (`Context`, `Sequence`), if it has one. */
export function localModel(target: unknown): Model | null {
  const m = (target as { model?: unknown } | null)?.model;
  return typeof m === "object" && m !== null && typeof (m as Partial<Model>).tokenize === "function" ? (m as Model) : null;
}

function needModel(model: Model | null, path: string): Model {
  if (model === null) throw new HttpError(501, "not_implemented_error", `${path} needs a local model's tokenizer; this server runs on remote targets`, { code: "not_implemented" });
  return model;
}

function optBool(r: Record<string, unknown>, key: string, fallback: boolean): boolean {
  const v = r[key];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== "boolean") invalidRequest(key, `expected a boolean, got ${JSON.stringify(v)}`);
  return v;
}

const strictDecoder = new TextDecoder("utf-8", { fatal: true });

export async function tokenize(req: IncomingMessage, res: ServerResponse, ctx: RouteContext, model: Model | null): Promise<number> {
  const body = await readJsonRequest(req, ctx);
  const m = needModel(model, "/tokenize");
  checkFields({ content: honoured, add_special: honoured, parse_special: honoured, with_pieces: honoured, model: honoured }, body, "llama-server /tokenize");
  if (typeof body.content !== "string") invalidRequest("content", "expected a string");
  const ids = Array.from(await m.tokenizeAsync(body.content, { addSpecial: optBool(body, "add_special", false), parseSpecial: optBool(body, "parse_special", true) }));
  if (!optBool(body, "with_pieces", false)) {
    sendJson(res, 200, { tokens: ids });
    return 200;
  }
  const tokens = ids.map((id) => {
    const bytes = m.tokenPiece(id, { special: true });
    let piece: string | number[];
    try {
      piece = strictDecoder.decode(bytes);
    } catch {
      piece = Array.from(bytes);
    }
    return { id, piece };
  });
  sendJson(res, 200, { tokens });
  return 200;
}

export async function detokenize(req: IncomingMessage, res: ServerResponse, ctx: RouteContext, model: Model | null): Promise<number> {
  const body = await readJsonRequest(req, ctx);
  const m = needModel(model, "/detokenize");
  checkFields({ tokens: honoured, model: honoured }, body, "llama-server /detokenize");
  const tokens = body.tokens;
  if (!Array.isArray(tokens)) invalidRequest("tokens", "expected an array of token ids");
  tokens.forEach((t: unknown, i) => {
    if (typeof t !== "number" || !Number.isInteger(t) || t < 0 || t >= m.vocabSize) invalidRequest(`tokens[${i}]`, `expected a token id in 0..${m.vocabSize - 1}, got ${JSON.stringify(t)}`);
  });
  sendJson(res, 200, { content: m.detokenize(tokens as number[], { special: true }) });
  return 200;
}

