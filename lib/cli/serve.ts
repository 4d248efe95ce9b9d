/**
 * `llamapeg serve`: the OpenAI-compatible HTTP server on a model (the test model by default).
 * Loopback only unless an API key is set or unauthenticated access is asked for by name.
 */
import { loadModel, type Sequence } from "../llama/index.js";
import { startServer, type ServerOptions } from "../server/index.js";
import { resolveServerOptions } from "../server/options.js";
import { ensureTestModel } from "../test-model/index.js";
import { intFlag, parseFlags, stringFlag } from "./args.js";
import { loadedModelFacts, summarizeModel } from "./model-summary.js";
import { progressBar } from "./progress.js";
import { styleFor } from "./style.js";
import { UsageError } from "./usage-error.js";

export const SERVE_SUMMARY = "an OpenAI-compatible HTTP server (chat completions, responses, Anthropic messages, completions, tokenize, metrics)";

export const SERVE_USAGE = `llamapeg serve [options]
  --model PATH              a GGUF model (default: the tiny random-weight test model, created on first use)
  --host HOST               default 127.0.0.1 (loopback); any other host needs --api-key or --allow-unauthenticated
  --port N                  default 8080 (0: any free port)
  --parallel N              requests generated at once, as sequences of one context (default 1); more wait in a queue;
                            a request with n choices takes n of them (n above N: 400)
  --max-queue N             requests that may wait for a slot; past that 429 (default 64)
  --api-key KEY             require Authorization: Bearer KEY (default: $LLAMAPEG_API_KEY)
  --allow-unauthenticated   serve a non-loopback host without an API key
  --body-limit BYTES        largest request body (default 8388608)
  --context-size N          tokens per sequence (default 4096)
  --threads N               compute threads (default: all cores)
  --model-id ID             the id in /v1/models (default: the file name)
  --cors                    allow browser requests from any origin (default: requests with an Origin header get 403)
  --cors-origins LIST       allow browser requests from these origins only (comma-separated, e.g. https://app.example)
  --allow-request-templates accept chat_template in requests (default: 400; a template is code the server runs)
  --embeddings              serve POST /v1/embeddings (and /v1/rerank for a reranker) on the model, pooled as it declares (else mean)
  --embedding-model PATH    the same on another GGUF (an embedding model or a reranker)
  --draft-model PATH        a small GGUF with the same vocabulary that drafts for the model: requests may then ask for
                            speculative: {type: "draft"} (prompt lookup, {type: "ngram"}, needs no second model)`;

export async function serveCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseFlags(
    argv,
    {
      model: { type: "string" },
      host: { type: "string" },
      port: { type: "string" },
      parallel: { type: "string" },
      "max-queue": { type: "string" },
      "api-key": { type: "string" },
      "allow-unauthenticated": { type: "boolean" },
      "body-limit": { type: "string" },
      "context-size": { type: "string" },
      threads: { type: "string" },
      "model-id": { type: "string" },
      cors: { type: "boolean" },
      "cors-origins": { type: "string" },
      "allow-request-templates": { type: "boolean" },
      embeddings: { type: "boolean" },
      "embedding-model": { type: "string" },
      "draft-model": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    "serve",
  );
  if (values.help) {
    console.log(SERVE_USAGE);
    return;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`, "serve");
  const port = intFlag(values, "port", 8080, 0, 65535);
  const parallel = intFlag(values, "parallel", 1, 1, 256);
  const maxQueue = intFlag(values, "max-queue", 64, 0, 1_000_000);
  const bodyLimit = intFlag(values, "body-limit", 8 * 1024 * 1024, 1024, 2 ** 31 - 1);
  const contextSize = intFlag(values, "context-size", 4096, 64, 1 << 24);
  const threads = values.threads === undefined ? undefined : intFlag(values, "threads", 1, 1, 1024);
  const apiKey = stringFlag(values, "api-key") ?? (process.env.LLAMAPEG_API_KEY || undefined);
  const note = styleFor(process.stderr);
  const modelId = stringFlag(values, "model-id");
  const corsOrigins = stringFlag(values, "cors-origins");
  if (values.cors === true && corsOrigins !== undefined) throw new UsageError("--cors allows every origin; --cors-origins names some: give one of them", "serve");
  const options: ServerOptions = {
    host: stringFlag(values, "host") ?? "127.0.0.1",
    port,
    ...(apiKey !== undefined ? { apiKey } : {}),
    allowUnauthenticated: values["allow-unauthenticated"] === true,
    bodyLimit,
    maxQueue,
    ...(modelId !== undefined ? { modelId } : {}),
    ...(values.cors === true ? { cors: true } : corsOrigins !== undefined ? { cors: corsOrigins.split(",").map((x) => x.trim()).filter((x) => x !== "") } : {}),
    allowRequestTemplates: values["allow-request-templates"] === true,
    log: (line) => process.stderr.write(`${note.dim(line)}\n`),
  };
  resolveServerOptions(options); // a refused host fails before the model loads

  const modelPath = stringFlag(values, "model") ?? (await ensureTestModel("tiny"));
  const bar = progressBar("loading model");
  const model = await loadModel(modelPath, { onProgress: (p: number) => bar.update(p) });
  bar.done();
  const embeddingPath = stringFlag(values, "embedding-model");
  const embeddingModel = embeddingPath !== undefined ? await loadModel(embeddingPath) : values.embeddings === true ? model : undefined;
  const draftPath = stringFlag(values, "draft-model");
  const draftModel = draftPath !== undefined ? await loadModel(draftPath) : undefined;
  try {
    if (embeddingModel !== undefined) options.embeddings = embeddingModel.createEmbeddingContext(threads === undefined ? {} : { threads });
    // One context, one sequence per slot: its decode thread batches every generating slot per step.
    const context = model.createContext({ contextSize, sequences: parallel, ...(threads === undefined ? {} : { threads }), ...(draftModel !== undefined ? { draftModel } : {}) });
    const slots: Sequence[] = Array.from({ length: parallel }, () => context.getSequence());
    const server = await startServer(slots, options);
    process.stderr.write(`llamapeg serve: ${summarizeModel(loadedModelFacts(model))} · ${parallel} slot${parallel === 1 ? "" : "s"}${apiKey !== undefined ? " · API key required" : ""}\n`);
    process.stdout.write(`${server.url}/v1\n`);
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    });
    process.stderr.write("llamapeg serve: shutting down\n");
    await server.close();
  } finally {
    if (embeddingModel !== model) embeddingModel?.dispose();
    draftModel?.dispose();
    model.dispose();
  }
}
