/**
 * The `llamapeg` command (main.ts runs it). Exit status: 0 ok, 1 runtime error, 2 usage error (unknown command or
 * flag, a flag value out of range). Errors are one line on stderr with their code; only a bug
 * (an error without a code) prints a stack.
 */
import { LlamapegError } from "../errors.js";
import { ANALYZE_SUMMARY, ANALYZE_USAGE, analyzeCommand } from "./analyze.js";
import { BENCH_SUMMARY, BENCH_USAGE, benchCommand } from "./bench.js";
import { CHAT_SUMMARY, CHAT_USAGE, chatCommand } from "./chat.js";
import { SERVE_SUMMARY, SERVE_USAGE, serveCommand } from "./serve.js";
import { styleFor } from "./style.js";
import { EXIT_RUNTIME, EXIT_USAGE, UsageError } from "./usage-error.js";
import { packageVersion } from "./version.js";

interface Command {
  name: string;
  summary: string;
  usage: string;
  run(argv: string[]): Promise<void>;
}

const COMMANDS: Command[] = [
  { name: "chat", summary: CHAT_SUMMARY, usage: CHAT_USAGE, run: chatCommand },
  { name: "analyze", summary: ANALYZE_SUMMARY, usage: ANALYZE_USAGE, run: analyzeCommand },
  { name: "serve", summary: SERVE_SUMMARY, usage: SERVE_USAGE, run: serveCommand },
  { name: "bench", summary: BENCH_SUMMARY, usage: BENCH_USAGE, run: benchCommand },
];

function overview(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length)) + 2;
  return [
    "usage: llamapeg <command> [options]",
    "",
    "commands:",
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}${c.summary}`),
    "",
    "  llamapeg help <command>   the options of a command",
    "  llamapeg --version        the version",
  ].join("\n");
}

function find(name: string): Command {
  const c = COMMANDS.find((x) => x.name === name);
  if (c === undefined) throw new UsageError(`unknown command ${JSON.stringify(name)} (commands: ${COMMANDS.map((x) => x.name).join(", ")})`);
  return c;
}

export async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case undefined:
    case "--help":
    case "-h":
      console.log(overview());
      return;
    case "--version":
    case "-V":
    case "version":
      console.log(`llamapeg ${packageVersion()}`);
      return;
    case "help":
      if (rest.length === 0) console.log(overview());
      else if (rest.length > 1) throw new UsageError("help takes one command name");
      else console.log(find(rest[0]!).usage);
      return;
    default: {
      const c = find(command);
      try {
        await c.run(rest);
      } catch (e) {
        // A flag check deep in a command knows the flag, not the command.
        if (e instanceof UsageError && e.command === undefined) throw new UsageError(e.message, c.name);
        throw e;
      }
    }
  }
}

/** One line for an error (a stack only for errors without a code: bugs); returns the exit status. */
export function reportError(e: unknown, write: (text: string) => void = (t) => process.stderr.write(t)): number {
  const red = styleFor(process.stderr).red;
  if (e instanceof UsageError) {
    write(`${red(`llamapeg: ${e.message}`)}\n${e.command !== undefined ? `see: llamapeg help ${e.command}` : "see: llamapeg help"}\n`);
    return EXIT_USAGE;
  }
  if (e instanceof LlamapegError) {
    const where = e.where !== undefined && !e.message.includes(e.where) ? ` (${e.where})` : "";
    write(`${red(`llamapeg: ${e.message}${where} [${e.code}]`)}\n`);
    return EXIT_RUNTIME;
  }
  write(`llamapeg: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  return EXIT_RUNTIME;
}

