/** The LlamapegError `fn` throws (the test fails when it returns or throws something else). */
import { expect } from "vitest";

import { LlamapegError } from "../../lib/errors.js";

export function thrownLlamapegError(fn: () => unknown): LlamapegError {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(LlamapegError);
  return err as LlamapegError;
}
