/**
 * `llamapeg chat`: a tool-calling chat on the embedded tiny test model (created on first use) or on
 * `--model path.gguf`. Streams content, reasoning (dimmed) and tool calls as they are generated,
 * then prints the final message and the timing.
 */
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline/promises";

import { ChatSession } from "../chat/session.js";
import type { AssistantMessage, ChatMessage } from "../chat/messages.js";
import type { ChatTool } from "../chat/tools.js";
import type { ToolChoiceMode } from "../chat/grammar/formats.js";
import { LlamapegError } from "../errors.js";
import { loadModel, type Context, type Model } from "../llama/index.js";
import { ensureTestModel } from "../test-model/index.js";
import { intFlag, numFlag, parseFlags } from "./args.js";
import { DEMO_PROMPT, DEMO_TOOLS } from "./demo-tools.js";
import { hermesPlan } from "./hermes-plan.js";
import { progressBar } from "./progress.js";

export const CHAT_USAGE = `llamapeg chat [options]
  --model PATH          a GGUF model (default: the tiny random-weight test model, created on first use)
  --prompt TEXT         one-shot prompt (default: interactive on a terminal, else a demo prompt)
  --tools FILE          OpenAI tools JSON array (default: a demo set: get_weather, search_web)
  --tool-choice MODE    auto | required | none (default: required on the test model, else auto)
  --no-grammar          sample freely (the output is still parsed)
  --calls-only          with --tool-choice required: no text before the calls (default on the test model)
  --json                print the final message as JSON instead of the human view
  --max-tokens N        default 256
  --temperature T       default 0.8 (0 = greedy)
  --seed N              default random
  --threads N           compute threads (default: all cores)
  --context-size N      default 4096`;

const DIM = "\x1b[2m";
const CYAN = "\x1b[36m";
const RESET = "\x1b[0m";

interface ChatOptions {
  tools: ChatTool[];
  toolChoice: ToolChoiceMode;
  grammar: boolean;
  json: boolean;
  maxTokens: number;
  temperature: number;
  seed: number | undefined;
  callsOnly: boolean;
}

export async function chatCommand(argv: string[]): Promise<void> {
  const { values } = parseFlags(argv, {
    model: { type: "string" },
    prompt: { type: "string" },
    tools: { type: "string" },
    "tool-choice": { type: "string" },
    "no-grammar": { type: "boolean" },
    "calls-only": { type: "boolean" },
    json: { type: "boolean" },
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
  const toolChoice = (values["tool-choice"] ?? (testModel ? "required" : "auto")) as string;
  if (!["auto", "required", "none"].includes(toolChoice)) {
    throw new LlamapegError("ERR_INVALID_ARGUMENT", `--tool-choice must be auto, required or none (got ${JSON.stringify(toolChoice)})`);
  }
  const options: ChatOptions = {
    tools: values.tools === undefined ? DEMO_TOOLS : readTools(values.tools as string),
    toolChoice: toolChoice as ToolChoiceMode,
    grammar: values["no-grammar"] !== true,
    json: values.json === true,
    maxTokens: intFlag(values, "max-tokens", 256, 1, 1 << 20),
    temperature: numFlag(values, "temperature", 0.8, 0, 10),
    seed: values.seed === undefined ? undefined : intFlag(values, "seed", 0, 0, 0xffffffff),
    callsOnly: testModel || values["calls-only"] === true,
  };

  if (testModel && !options.json) {
    process.stderr.write("using the tiny random-weight test model (gibberish text; the grammar keeps tool calls valid)\n");
  }
  const modelPath: string = testModel ? await ensureTestModel("tiny") : (values.model as string);
  const bar = progressBar("loading model");
  const model = await loadModel(modelPath, { onProgress: (p: number) => bar.update(p) });
  bar.done();
  try {
    const context = model.createContext({
      contextSize: intFlag(values, "context-size", 4096, 64, 1 << 24),
      ...(values.threads === undefined ? {} : { threads: intFlag(values, "threads", 1, 1, 1024) }),
    });
    const messages: ChatMessage[] = [];
    if (values.prompt !== undefined || !process.stdin.isTTY) {
      messages.push({ role: "user", content: (values.prompt as string | undefined) ?? DEMO_PROMPT });
      await turn(model, context, messages, options);
    } else {
      const rl = createInterface({ input: process.stdin, output: process.stdout });
      try {
        for (;;) {
          const line = await rl.question("\n> ");
          if (line.trim() === "" || line.trim() === "/exit") break;
          messages.push({ role: "user", content: line });
          messages.push(await turn(model, context, messages, options));
        }
      } finally {
        rl.close();
      }
    }
  } finally {
    model.dispose();
  }
}

function readTools(path: string): ChatTool[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    throw new LlamapegError("ERR_INVALID_ARGUMENT", `--tools ${path}: ${(e as Error).message}`, { where: path });
  }
  if (!Array.isArray(parsed)) throw new LlamapegError("ERR_INVALID_ARGUMENT", `--tools ${path}: expected a JSON array of tools`, { where: path });
  return parsed as ChatTool[];
}

function tokenText(model: Model, id: number | null): string {
  if (id === null) return "";
  return new TextDecoder().decode(model.tokenPiece(id, { special: true }));
}

async function turn(model: Model, context: Context, messages: ChatMessage[], o: ChatOptions): Promise<ChatMessage> {
  const template = model.chatTemplate();
  if (template === null) throw new LlamapegError("ERR_TEMPLATE_RENDER", "the model has no tokenizer.chat_template", { where: model.path });
  const plan = hermesPlan({
    template,
    messages,
    tools: o.tools,
    toolChoice: o.toolChoice,
    parallel: false,
    bosToken: tokenText(model, model.bos),
    eosToken: tokenText(model, model.eos),
    addBos: model.addBos,
    addEos: model.addEos,
    callsOnly: o.callsOnly,
  });
  const prompt = model.tokenize(plan.prompt, { addSpecial: true, parseSpecial: true });
  const generation = context.generate(prompt, {
    maxTokens: o.maxTokens,
    temperature: o.temperature,
    ...(o.seed === undefined ? {} : { seed: o.seed }),
    ...(o.grammar && plan.grammar !== ""
      ? {
          grammar: {
            gbnf: plan.grammar,
            lazy: plan.grammarLazy,
            triggerWords: plan.grammarTriggers.filter((t) => t.type === "word").map((t) => t.value),
            triggerPatterns: plan.grammarTriggers.filter((t) => t.type !== "word" && t.type !== "token").map((t) => t.value),
          },
        }
      : {}),
    // Markers that are not one token in this vocabulary cannot be kept whole; the reference skips them too.
    preservedTokens: plan.preservedTokens.filter((t) => model.tokenize(t, { addSpecial: false, parseSpecial: true }).length === 1),
  });
  const session = new ChatSession(plan);
  const out = process.stdout;
  let lastKind = "";
  for await (const { token, piece } of generation) {
    const frame = session.feed(piece, token);
    if (o.json) continue;
    for (const ev of frame.events) process.stderr.write(`\n[${ev.type} at byte ${ev.position}: ${ev.message}]\n`);
    for (const d of frame.deltas) {
      if (d.reasoning_content !== undefined) out.write(`${DIM}${d.reasoning_content}${RESET}`);
      if (d.content !== undefined) out.write(d.content);
      for (const call of d.tool_calls ?? []) {
        if (call.function?.name !== undefined) out.write(`${lastKind === "" ? "" : "\n"}${CYAN}→ ${call.function.name}${RESET}(`);
        if (call.function?.arguments) out.write(call.function.arguments);
        lastKind = "tool";
      }
    }
  }
  const final = session.finish();
  const { stats } = await generation.result();
  const message: AssistantMessage = final.message;
  if (o.json) {
    out.write(`${JSON.stringify({ message, stats }, null, 2)}\n`);
  } else {
    if (message.tool_calls.length > 0) out.write(")");
    out.write("\n\n");
    out.write(`${JSON.stringify(message, null, 2)}\n`);
    const pps = stats.promptMs > 0 ? ((stats.promptTokens - stats.reusedTokens) / stats.promptMs) * 1000 : 0;
    const gps = stats.generateMs > 0 ? (stats.generatedTokens / stats.generateMs) * 1000 : 0;
    process.stderr.write(
      `${DIM}prompt ${stats.promptTokens} tokens (${stats.reusedTokens} reused) ${pps.toFixed(1)} tok/s · ` +
        `generated ${stats.generatedTokens} tokens ${gps.toFixed(1)} tok/s · sampling ${(stats.sampleMs / Math.max(1, stats.generatedTokens)).toFixed(2)} ms/token · ` +
        `stop: ${stats.stopReason}${RESET}\n`,
    );
  }
  return { role: "assistant", content: message.content, tool_calls: message.tool_calls } as ChatMessage;
}
