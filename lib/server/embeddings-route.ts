/**
 * POST /v1/embeddings (OpenAI's shape: `input` a string, strings, token ids or lists of them;
 * `encoding_format` "float" or "base64", the little-endian float32 bytes the official client
 * decodes) and POST /v1/rerank (the shape llama-server and the Jina / Cohere rerank APIs share:
 * `query`, `documents`, `top_n` -> `results: [{index, relevance_score}]`, best first). Both run on
 * the server's embedding context (ServerOptions.embeddings), mirroring tools/server's
 * handle_embeddings_impl / post_rerank and format_response_rerank; without one they answer 501.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

import { LlamapegError } from "../errors.js";
import type { EmbeddingContext, EmbeddingInput } from "../llama/embedding.js";
import { invalidRequest } from "../openai/errors.js";
import { isObject } from "../json-syntax.js";
import { checkFields, honoured, ignored, unsupported } from "../openai/field-contract.js";
import { readJsonRequest, type RouteContext } from "./chat-run.js";
import { HttpError } from "./http-error.js";
import { sendJson } from "./respond.js";

export interface EmbeddingRouteContext extends RouteContext {
  embeddings: EmbeddingContext | undefined;
}

const EMBEDDING_FIELDS = {
  input: honoured,
  model: honoured, // echoed; the server has one embedding model
  encoding_format: honoured,
  dimensions: unsupported("vectors have the model's width; truncating them is not offered"),
  user: ignored("an end-user id for abuse monitoring; nothing is monitored here"),
};

const RERANK_FIELDS = {
  query: honoured,
  documents: honoured,
  top_n: honoured,
  return_documents: honoured,
  model: honoured,
};

function needContext(ctx: EmbeddingRouteContext, path: string): EmbeddingContext {
  const e = ctx.embeddings;
  if (e === undefined || e.disposed) {
    throw new HttpError(501, "not_implemented_error", `${path} needs an embedding context; start the server with one (startServer's \`embeddings\` option, \`llamapeg serve --embeddings\`)`, {
      code: "not_implemented",
    });
  }
  return e;
}

/** `input` as the list of inputs it stands for (OpenAI: a string, strings, token ids, lists of token ids). */
function inputsOf(input: unknown): EmbeddingInput[] {
  if (typeof input === "string") return [input];
  if (!Array.isArray(input) || input.length === 0) invalidRequest("input", "expected a non-empty string, array of strings, array of token ids or array of token-id arrays");
  if (input.every((x) => typeof x === "number")) return [input as number[]];
  return input.map((x, i) => {
    if (typeof x === "string") return x;
    if (Array.isArray(x) && x.every((t) => typeof t === "number")) return x as number[];
    return invalidRequest(`input[${i}]`, `expected a string or an array of token ids, got ${JSON.stringify(x)?.slice(0, 80)}`);
  });
}

/** The embedding context's errors name `inputs[i]` / `documents[i]`; on the wire the field is `field[i]`. */
function onWire(error: unknown, from: string, to: string): unknown {
  if (!(error instanceof Error)) return error;
  const where = (error as { where?: unknown }).where;
  const code = (error as { code?: unknown }).code;
  if (typeof where !== "string" || !where.startsWith(`${from}[`)) return error;
  const field = to + where.slice(from.length);
  const message = error.message.startsWith(where) ? field + error.message.slice(where.length) : `${field}: ${error.message}`;
  return new LlamapegError(code === "ERR_CONTEXT_FULL" ? "ERR_CONTEXT_FULL" : "ERR_INVALID_REQUEST", message, { where: field, cause: error });
}

function base64Of(v: Float32Array): string {
  // little-endian float32, as OpenAI sends them (the platforms Node runs on are little-endian)
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64");
}

export async function embeddings(req: IncomingMessage, res: ServerResponse, ctx: EmbeddingRouteContext): Promise<number> {
  const body = await readJsonRequest(req, ctx);
  const e = needContext(ctx, "/v1/embeddings");
  checkFields(EMBEDDING_FIELDS, body, "OpenAI Embeddings");
  if (e.pooling === "rank") throw new HttpError(501, "not_implemented_error", "the server's embedding model is a reranker: use /v1/rerank", { code: "not_implemented" });
  const format = body.encoding_format ?? "float";
  if (format !== "float" && format !== "base64") invalidRequest("encoding_format", `expected "float" or "base64", got ${JSON.stringify(format)}`);
  if (body.model !== undefined && body.model !== null && typeof body.model !== "string") invalidRequest("model", "expected a string");
  const inputs = inputsOf(body.input);
  inputs.forEach((x, i) => {
    if (x.length === 0) invalidRequest(inputs.length === 1 && typeof body.input === "string" ? "input" : `input[${i}]`, "must not be empty");
  });
  let result;
  try {
    result = await e.embedWithUsage(inputs);
  } catch (error) {
    throw onWire(error, "inputs", "input");
  }
  const tokens = result.tokens.reduce((a, b) => a + b, 0);
  sendJson(res, 200, {
    object: "list",
    data: result.embeddings.map((v, index) => ({ object: "embedding", index, embedding: format === "base64" ? base64Of(v) : Array.from(v) })),
    model: typeof body.model === "string" ? body.model : ctx.modelId,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  });
  return 200;
}

export async function rerank(req: IncomingMessage, res: ServerResponse, ctx: EmbeddingRouteContext): Promise<number> {
  const body = await readJsonRequest(req, ctx);
  const e = needContext(ctx, "/v1/rerank");
  checkFields(RERANK_FIELDS, body, "rerank (llama-server, Jina, Cohere)");
  if (e.pooling !== "rank") {
    throw new HttpError(501, "not_implemented_error", `/v1/rerank needs a reranker model (rank pooling); the server's embedding model pools "${e.pooling}"`, { code: "not_implemented" });
  }
  if (typeof body.query !== "string") invalidRequest("query", "expected a string");
  const docs = body.documents;
  if (!Array.isArray(docs) || docs.length === 0) invalidRequest("documents", "expected a non-empty array of strings");
  // Cohere also takes {text} objects
  const documents = docs.map((d: unknown, i) => (typeof d === "string" ? d : isObject(d) && typeof d.text === "string" ? d.text : invalidRequest(`documents[${i}]`, "expected a string")));
  const topN = body.top_n ?? documents.length;
  if (typeof topN !== "number" || !Number.isInteger(topN) || topN < 1) invalidRequest("top_n", `expected a positive integer, got ${JSON.stringify(topN)}`);
  const withDocs = body.return_documents ?? false;
  if (typeof withDocs !== "boolean") invalidRequest("return_documents", "expected a boolean");
  if (body.model !== undefined && body.model !== null && typeof body.model !== "string") invalidRequest("model", "expected a string");
  let result;
  try {
    result = await e.rankWithUsage(body.query, documents);
  } catch (error) {
    throw onWire(error, "documents", "documents");
  }
  const ranked = result.scores
    .map((relevance_score, index) => ({ index, relevance_score, ...(withDocs ? { document: { text: documents[index]! } } : {}) }))
    .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index)
    .slice(0, topN);
  const tokens = result.tokens.reduce((a, b) => a + b, 0);
  sendJson(res, 200, {
    model: typeof body.model === "string" ? body.model : ctx.modelId,
    object: "list",
    usage: { prompt_tokens: tokens, total_tokens: tokens },
    results: ranked,
  });
  return 200;
}
