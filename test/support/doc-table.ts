/**
 * The generated tables of docs/ (conformance results a test run writes with its LLAMAPEG_WRITE_*
 * flag): the text between `<!-- NAME:begin -->` and `<!-- NAME:end -->` in a docs file is replaced.
 */
import fs from "node:fs";

/** Replaces what stands between the markers `name` in `docPath` with `text` (one newline each side). */
export function spliceDocTable(docPath: string, name: string, text: string): void {
  const doc = fs.readFileSync(docPath, "utf8");
  const begin = `<!-- ${name}:begin -->`;
  const end = `<!-- ${name}:end -->`;
  const a = doc.indexOf(begin);
  const b = doc.indexOf(end);
  if (a === -1 || b < a) throw new Error(`${docPath} lacks the ${name} markers`);
  fs.writeFileSync(docPath, `${doc.slice(0, a + begin.length)}\n${text}\n${doc.slice(b)}`);
}
