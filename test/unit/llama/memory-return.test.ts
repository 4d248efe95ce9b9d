// A disposed context's freed memory goes back to the system a second after the last dispose,
// unless a context is created first (lib/llama/memory-return.ts). The native call is mocked: what
// is checked is when it happens.
import { afterEach, beforeEach, expect, it, vi } from "vitest";

const calls = { trim: 0 };
vi.mock("../../../lib/native/binding.js", () => ({
  binding: () => ({ returnFreedMemory: () => calls.trim++ }),
}));

const { keepFreedMemory, returnMemorySoon } = await import("../../../lib/llama/memory-return.js");

beforeEach(() => {
  vi.useFakeTimers();
  calls.trim = 0;
});
afterEach(() => {
  keepFreedMemory();
  vi.useRealTimers();
});

it("returns the memory one second after a dispose, once for several disposes in a row", () => {
  returnMemorySoon();
  vi.advanceTimersByTime(600);
  returnMemorySoon();
  vi.advanceTimersByTime(999);
  expect(calls.trim).toBe(0);
  vi.advanceTimersByTime(1);
  expect(calls.trim).toBe(1);
  vi.advanceTimersByTime(5000);
  expect(calls.trim).toBe(1);
});

it("a context created before the second is up keeps the memory; its own dispose returns it", () => {
  returnMemorySoon();
  vi.advanceTimersByTime(500);
  keepFreedMemory();
  vi.advanceTimersByTime(5000);
  expect(calls.trim).toBe(0);
  returnMemorySoon();
  vi.advanceTimersByTime(1000);
  expect(calls.trim).toBe(1);
});
