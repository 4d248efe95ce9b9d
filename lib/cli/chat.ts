/**
 * `llamapeg chat`: a tool-calling chat through `createChatCompletion` on the embedded tiny test model
 * (created on first use) or on `--model path.gguf`. Streams content, reasoning (dimmed) and tool
 * calls as they are generated, then prints the final message and the timing.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline/promises";

import type { ChatTool } from "../chat/tools.js";
import { LlamapegError } from "../errors.js";
import { loadModel, type Context } from "../llama/index.js";
import { createChatCompletion, type ChatCompletion, type ChatCompletionRequest, type ToolChoice } from "../openai/index.js";
import { ensureTestModel } from "../test-model/index.js";
import { intFlag, numFlag, parseFlags } from "./args.js";
import { DEMO_PROMPT, DEMO_TOOLS } from "./demo-tools.js";
import { progressBar } from "./progress.js";

export const CHAT_USAGE = `llamapeg chat [options]
  --model PATH          a GGUF model (default: the tiny random-weight test model, created on first use)
  --prompt TEXT         one-shot prompt (default: interactive on a terminal, else a demo prompt)
  --tools FILE          OpenAI tools JSON array (default: a demo set: get_weather, search_web; "none": no tools)
  --tool-choice MODE    auto | required | none | <tool name> (default: required on the test model, else auto)
  --calls-only          with required: the output is only the calls, no text before them (default on the test model)
  --json-schema FILE    answer with JSON valid against this schema (with tools: a call or such JSON)
  --chat-template FILE  a Jinja chat template instead of the model's
  --no-grammar          sample freely (the output is still parsed)
  --stream              with --json: print every chat.completion.chunk, one per line
  --json                print the final chat.completion object instead of the human view
  --record FILE         save the generation (plan, token ids, pieces) for offline replay
  --max-tokens N        default 256
  --temperature T       default 0.8 (0 = greedy)
  --seed N              default random
  --threads N           compute threads (default: all cores)
  --context-size N      default 4096`;

const DIM = "\x1b[2m";
const CYAN = "\x1b[36m";
const YELLOW = "\x1b[33m";
const RESET = "\x1b[0m";

function readJson(path: string, flag: string): unknown {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    throw new LlamapegError("ERR_INVALID_ARGUMENT", `--${flag} ${path}: ${(e as Error).message}`, { where: path });
  }
}

function readTools(path: string): ChatTool[] {
  if (path === "none") return [];
  const parsed = readJson(path, "tools");
  if (!Array.isArray(parsed)) throw new LlamapegError("ERR_INVALID_ARGUMENT", `--tools ${path}: expected a JSON array of tools`, { where: path });
  return parsed as ChatTool[];
}

function toolChoiceOf(value: string, tools: ChatTool[]): ToolChoice {
  if (value === "auto" || value === "required" || value === "none") return value;
  if (tools.some((t) => t.function.name === value)) return { type: "function", function: { name: value } };
  throw new LlamapegError("ERR_INVALID_ARGUMENT", `--tool-choice must be auto, required, none or a tool name (got ${JSON.stringify(value)})`);
}

export async function chatCommand(argv: string[]): Promise<void> {
  const { values } = parseFlags(argv, {
    model: { type: "string" },
    prompt: { type: "string" },
    tools: { type: "string" },
    "tool-choice": { type: "string" },
    "calls-only": { type: "boolean" },
    "json-schema": { type: "string" },
    "chat-template": { type: "string" },
    "no-grammar": { type: "boolean" },
    stream: { type: "boolean" },
    json: { type: "boolean" },
    record: { type: "string" },
    "max-tokens": { type: "string" },
    temperature: { type: "string" },
    seed: { type: "string" },
    threads: { type: "string" },
    "context-size": { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) {
    console.log(CHAT_USAGE);
    return;
  }
  const testModel = values.model === undefined;
  const tools = values.tools === undefined ? DEMO_TOOLS : readTools(values.tools as string);
  const toolChoice = tools.length === 0 ? "none" : toolChoiceOf((values["tool-choice"] as string | undefined) ?? (testModel ? "required" : "auto"), tools);
  const base: Omit<ChatCompletionRequest, "messages"> = {
    ...(tools.length > 0 ? { tools, tool_choice: toolChoice } : {}),
    // Random weights never choose to write a call marker by themselves: on the test model, calls only.
    ...(testModel || values["calls-only"] === true ? { calls_only: true } : {}),
    ...(values["json-schema"] !== undefined
      ? { response_format: { type: "json_schema" as const, json_schema: { name: "answer", schema: readJson(values["json-schema"] as string, "json-schema") as Record<string, unknown> } } }
      : {}),
    ...(values["chat-template"] !== undefined ? { chat_template: readFileSync(values["chat-template"] as string, "utf8") } : {}),
    ...(values["no-grammar"] === true ? { grammar: false as const } : {}),
    max_tokens: intFlag(values, "max-tokens", 256, 1, 1 << 20),
    temperature: numFlag(values, "temperature", 0.8, 0, 2),
    ...(values.seed === undefined ? {} : { seed: intFlag(values, "seed", 0, 0, 0xffffffff) }),
  };
  const json = values.json === true;
  if (testModel && !json) process.stderr.write(`${DIM}using the tiny random-weight test model (gibberish text; the grammar keeps tool calls valid)${RESET}\n`);
  const modelPath: string = testModel ? await ensureTestModel("tiny") : (values.model as string);
  const bar = progressBar("loading model");
  const model = await loadModel(modelPath, { onProgress: (p: number) => bar.update(p) });
  bar.done();
  try {
    const context = model.createContext({
      contextSize: intFlag(values, "context-size", 4096, 64, 1 << 24),
      ...(values.threads === undefined ? {} : { threads: intFlag(values, "threads", 1, 1, 1024) }),
    });
    const turn = async (messages: unknown[]): Promise<ChatCompletion> =>
      runTurn(context, { ...base, messages }, { json, stream: values.stream === true, record: values.record as string | undefined });
    const messages: unknown[] = [];
    if (values.prompt !== undefined || !process.stdin.isTTY) {
      messages.push({ role: "user", content: (values.prompt as string | undefined) ?? DEMO_PROMPT });
      await turn(messages);
      return;
    }
    const rl = createInterface({ input: process.stdin, output: process.stdout });
    try {
      for (;;) {
        const line = await rl.question("\n> ");
        if (line.trim() === "" || line.trim() === "/exit") break;
        messages.push({ role: "user", content: line });
        const c = await turn(messages);
        messages.push(c.choices[0].message);
      }
    } finally {
      rl.close();
    }
  } finally {
    model.dispose();
  }
}

interface TurnOptions {
  json: boolean;
  stream: boolean;
  record: string | undefined;
}

async function runTurn(context: Context, request: ChatCompletionRequest, o: TurnOptions): Promise<ChatCompletion> {
  const out = process.stdout;
  const stream = createChatCompletion(context, { ...request, stream: true }, o.record === undefined ? {} : { onRecord: (r) => writeFileSync(o.record!, JSON.stringify(r)) });
  let inCall = false;
  for await (const chunk of stream) {
    if (o.json) {
      if (o.stream) out.write(`${JSON.stringify(chunk)}\n`);
      continue;
    }
    if (chunk.llamapeg !== undefined) {
      if ("warnings" in chunk.llamapeg) for (const w of chunk.llamapeg.warnings) process.stderr.write(`${YELLOW}warning: ${w}${RESET}\n`);
      else process.stderr.write(`\n${YELLOW}[${chunk.llamapeg.event.type} at byte ${chunk.llamapeg.event.position}: ${chunk.llamapeg.event.message}]${RESET}\n`);
    }
    const d = chunk.choices[0]?.delta;
    if (d === undefined) continue;
    if (d.reasoning_content !== undefined) out.write(`${DIM}${d.reasoning_content}${RESET}`);
    if (typeof d.content === "string") out.write(d.content);
    for (const call of d.tool_calls ?? []) {
      if (call.function?.name !== undefined) {
        out.write(`${inCall ? ")\n" : "\n"}${CYAN}→ ${call.function.name}${RESET}(`);
        inCall = true;
      }
      if (call.function?.arguments) out.write(call.function.arguments);
    }
  }
  const c = await stream.completion;
  if (o.json) {
    if (!o.stream) out.write(`${JSON.stringify(c, null, 2)}\n`);
    return c;
  }
  if (inCall) out.write(")");
  out.write("\n\n");
  out.write(`${JSON.stringify(c.choices[0].message, null, 2)}\n`);
  const t = c.llamapeg.timings;
  process.stderr.write(
    `${DIM}prompt ${c.usage.prompt_tokens} tokens (${c.usage.prompt_tokens_details?.cached_tokens ?? 0} reused) ${t.prompt_per_second.toFixed(1)} tok/s · ` +
      `generated ${c.usage.completion_tokens} tokens ${t.generation_per_second.toFixed(1)} tok/s · sampling ${(t.sampling_ms / Math.max(1, c.usage.completion_tokens)).toFixed(2)} ms/token · ` +
      `finish: ${c.choices[0].finish_reason}${RESET}\n`,
  );
  return c;
}
