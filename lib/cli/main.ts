#!/usr/bin/env node
/** The `llamapeg` command. */
import { LlamapegError } from "../errors.js";
import { ANALYZE_USAGE, analyzeCommand } from "./analyze.js";
import { BENCH_USAGE, benchCommand } from "./bench.js";
import { CHAT_USAGE, chatCommand } from "./chat.js";

const USAGE = `usage: llamapeg <command> [options]

commands:
  chat      a tool-calling chat (the main job)
  analyze   a chat template's analysis and the grammar for a tool set
  bench     grammar on / off / lazy A/B: tokens/s, sampling cost, latency, valid tool calls

${CHAT_USAGE}

${ANALYZE_USAGE}

${BENCH_USAGE}`;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case "chat":
      return chatCommand(rest);
    case "analyze":
      return analyzeCommand(rest);
    case "bench":
      return benchCommand(rest);
    case undefined:
    case "help":
    case "--help":
    case "-h":
      console.log(USAGE);
      return;
    default:
      throw new LlamapegError("ERR_INVALID_ARGUMENT", `unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
  }
}

main(process.argv.slice(2)).catch((e: unknown) => {
  if (e instanceof LlamapegError) {
    process.stderr.write(`llamapeg: ${e.message}${e.where ? ` (${e.where})` : ""} [${e.code}]\n`);
  } else {
    process.stderr.write(`llamapeg: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  }
  process.exitCode = 1;
});
