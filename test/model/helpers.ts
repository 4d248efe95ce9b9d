// Shared helpers for the model tests.
import { expect } from "vitest";

import { LlamapegError } from "../../lib/errors.js";
import type { Generation, GeneratedToken } from "../../lib/llama/index.js";

export async function collect(generation: Generation): Promise<GeneratedToken[]> {
  const out: GeneratedToken[] = [];
  for await (const item of generation) out.push(item);
  return out;
}

export function concatPieces(items: GeneratedToken[]): Uint8Array {
  const size = items.reduce((n, i) => n + i.piece.length, 0);
  const all = new Uint8Array(size);
  let at = 0;
  for (const i of items) {
    all.set(i.piece, at);
    at += i.piece.length;
  }
  return all;
}

export function text(items: GeneratedToken[]): string {
  return new TextDecoder().decode(concatPieces(items));
}

/** Runs `fn` and returns the LlamapegError it throws (sync or async), failing otherwise. */
export async function codeOf(fn: () => unknown): Promise<LlamapegError> {
  let caught: unknown;
  try {
    await fn();
  } catch (error) {
    caught = error;
  }
  expect(caught, "expected an error").toBeInstanceOf(LlamapegError);
  return caught as LlamapegError;
}
