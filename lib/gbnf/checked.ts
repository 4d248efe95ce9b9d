/**
 * Grammars known to pass `checkGbnf` with a root, by their exact text: the server's planning
 * thread checks a plan's grammar there (lib/server/plan-worker.ts) and tells the event loop, so
 * `generate()` need not check the same text again on it (a 128-tool grammar takes a quarter of a
 * second on a busy machine). Keyed by the whole text: an equal text checks equally. Emptied by
 * `clearCaches` (lib/cache.ts): a grammar not known is checked again.
 */
import { boundedCache } from "../cache.js";

const KEPT = 64;
const known = boundedCache<string, true>(KEPT);

function key(gbnf: string, root: string): string {
  return `${root}\0${gbnf}`;
}

export function markGbnfChecked(gbnf: string, root = "root"): void {
  known.set(key(gbnf, root), true);
}

export function gbnfChecked(gbnf: string, root = "root"): boolean {
  return known.has(key(gbnf, root));
}
