// When a disposed context's memory goes back to the system. Its decode thread frees the buffers
// at dispose(); giving the pages back at once (malloc_trim) made the next context touch fresh
// pages, and a context created right after another (a script that runs each case in a new
// context) paid about 1,000 more page faults on its first prompt (docs/bench.md, prefill). So
// the pages go back a second after the last dispose, unless a context is created first (it
// reuses them; they go back a second after it is disposed). Models still return theirs at once.
import { binding } from "../native/binding.js";

const DELAY_MS = 1000;
let timer: ReturnType<typeof setTimeout> | undefined;

/** After a context's dispose(). */
export function returnMemorySoon(): void {
  if (timer !== undefined) clearTimeout(timer);
  timer = setTimeout(() => {
    timer = undefined;
    binding().returnFreedMemory();
  }, DELAY_MS);
  timer.unref();
}

/** When a context is created: it may reuse what the last one freed. */
export function keepFreedMemory(): void {
  if (timer === undefined) return;
  clearTimeout(timer);
  timer = undefined;
}
