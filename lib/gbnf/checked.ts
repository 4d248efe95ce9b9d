/**
 * Grammars known to pass `checkGbnf` with a root, by their exact text: the server's planning
 * thread checks a plan's grammar there (lib/server/plan-worker.ts) and tells the event loop, so
 * `generate()` need not check the same text again on it (a 128-tool grammar takes a quarter of a
 * second on a busy machine). Keyed by the whole text: an equal text checks equally.
 */
const KEPT = 64;
const known = new Map<string, true>();

function key(gbnf: string, root: string): string {
  return `${root}\0${gbnf}`;
}

export function markGbnfChecked(gbnf: string, root = "root"): void {
  const k = key(gbnf, root);
  known.delete(k);
  known.set(k, true);
  if (known.size > KEPT) known.delete(known.keys().next().value!);
}

export function gbnfChecked(gbnf: string, root = "root"): boolean {
  return known.has(key(gbnf, root));
}
