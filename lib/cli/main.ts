#!/usr/bin/env node
/** The `llamapeg` command. */
import { LlamapegError } from "../errors.js";
import { CHAT_USAGE, chatCommand } from "./chat.js";

const USAGE = `usage: llamapeg <command> [options]

commands:
  chat      a tool-calling chat (the main job); llamapeg chat --help

${CHAT_USAGE}`;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case "chat":
      return chatCommand(rest);
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
