/** A command-line usage error (unknown command or flag, a flag value out of range): exit status 2. */
import { LlamapegError } from "../errors.js";

export class UsageError extends LlamapegError {
  /** The command whose usage applies (for the "see llamapeg help <command>" hint). */
  readonly command: string | undefined;

  constructor(message: string, command?: string) {
    super("ERR_INVALID_ARGUMENT", message);
    this.name = "UsageError";
    this.command = command;
  }
}

/** Exit statuses: 0 ok, 1 runtime error, 2 usage error. */
export const EXIT_OK = 0;
export const EXIT_RUNTIME = 1;
export const EXIT_USAGE = 2;
