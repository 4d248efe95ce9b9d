/**
 * Splitting two renderings into what they share and where they differ. Everything the analysis
 * infers comes from such splits of two conversations that differ in one respect.
 */
import { segmentizeMarkers, type Segment } from "./text.js";

/** `left = prefix + left + suffix`, `right = prefix + right + suffix`. */
export interface DiffSplit {
  prefix: string;
  suffix: string;
  left: string;
  right: string;
}

function commonPrefixLength(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

function commonSuffixLength(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[a.length - 1 - i] === b[b.length - 1 - i]) i++;
  return i;
}

const same = (a: Segment, b: Segment) => a.type === b.type && a.value === b.value;

/**
 * The common prefix and suffix of two strings, aligned to whole markers where they share
 * markers (so a prefix never ends inside `<tag`), then refined character by character inside
 * the differing text. Matches the reference's `calculate_diff_split`, including its rule that a
 * string that is a prefix of the other yields exactly that prefix.
 */
export function calculateDiffSplit(left: string, right: string): DiffSplit {
  const result: DiffSplit = { prefix: "", suffix: "", left: "", right: "" };
  const ls = segmentizeMarkers(left);
  const rs = segmentizeMarkers(right);
  if (ls.length === 0) return { ...result, right };
  if (rs.length === 0) return { ...result, left };

  // inclusive segment ranges still undecided
  let lStart = 0;
  let lEnd = ls.length - 1;
  let rStart = 0;
  let rEnd = rs.length - 1;
  let leftConsumed = false;
  let rightConsumed = false;

  while (lStart !== lEnd && rStart !== rEnd) {
    let advanced = false;
    if (same(ls[lStart]!, rs[rStart]!)) {
      result.prefix += ls[lStart]!.value;
      lStart++;
      rStart++;
      advanced = true;
    }
    if (same(ls[lEnd]!, rs[rEnd]!)) {
      result.suffix = ls[lEnd]!.value + result.suffix;
      if (lStart !== lEnd) lEnd--;
      else leftConsumed = true;
      if (rStart !== rEnd) rEnd--;
      else rightConsumed = true;
      advanced = true;
    }
    if (!advanced) break;
  }

  if (lStart === lEnd && rStart !== rEnd) {
    if (same(ls[lStart]!, rs[rEnd]!)) {
      result.suffix = rs[rEnd]!.value + result.suffix;
      rEnd--;
      leftConsumed = true;
    } else if (same(ls[lStart]!, rs[rStart]!)) {
      result.prefix += rs[rStart]!.value;
      rStart++;
      leftConsumed = true;
    }
  } else if (rStart === rEnd && lStart !== lEnd) {
    if (same(ls[lEnd]!, rs[rStart]!)) {
      result.suffix = ls[lEnd]!.value + result.suffix;
      lEnd--;
      rightConsumed = true;
    } else if (same(ls[lStart]!, rs[rStart]!)) {
      result.prefix += ls[lStart]!.value;
      lStart++;
      rightConsumed = true;
    }
  } else if (lStart === lEnd && rStart === rEnd && same(ls[lStart]!, rs[rStart]!) && ls[lStart]!.type === "marker") {
    result.prefix += rs[rStart]!.value;
    leftConsumed = true;
    rightConsumed = true;
  }

  // The reference reads the segment types at the (possibly moved) range ends; an index that
  // moved out of range reads as "not text".
  const typeAt = (segs: Segment[], i: number) => (i >= 0 && i < segs.length ? segs[i]!.type : "marker");
  const canHaveTextSuffix = typeAt(ls, lEnd) === "text" && typeAt(rs, rEnd) === "text";
  const canHaveTextPrefix = typeAt(rs, rStart) === "text" && typeAt(ls, lStart) === "text";

  const join = (segs: Segment[], from: number, to: number) => {
    let s = "";
    for (let i = from; i < to; i++) s += segs[i]!.value;
    return s;
  };
  const remLeft = join(ls, lStart, leftConsumed ? lEnd : lEnd + 1);
  const remRight = join(rs, rStart, rightConsumed ? rEnd : rEnd + 1);

  const suffixLen = canHaveTextSuffix ? commonSuffixLength(remLeft, remRight) : 0;
  const prefixLen = canHaveTextPrefix
    ? commonPrefixLength(remLeft.slice(0, remLeft.length - suffixLen), remRight.slice(0, remRight.length - suffixLen))
    : 0;

  result.prefix += remLeft.slice(0, prefixLen);
  result.suffix = remLeft.slice(remLeft.length - suffixLen) + result.suffix;
  result.left = remLeft.slice(prefixLen, remLeft.length - suffixLen);
  result.right = remRight.slice(prefixLen, remRight.length - suffixLen);

  if (result.left === "" && result.right === "") {
    // no difference: the whole text is the prefix
    result.prefix = left;
    result.suffix = "";
  }
  // Left wholly contained at the start of right: say so directly, otherwise trailing segments
  // shared by both ends (a final "\n") rotate the split.
  if (result.left === "" && result.right !== "" && right.startsWith(left)) {
    result.prefix = left;
    result.suffix = "";
    result.right = right.slice(left.length);
  }
  return result;
}

/**
 * The part of `full` before the first occurrence of the common prefix of `left` and `right`
 * ("" when they share no prefix or `full` does not contain it).
 */
export function untilCommonPrefix(full: string, left: string, right: string): string {
  const n = commonPrefixLength(left, right);
  if (n === 0) return "";
  const pos = full.indexOf(left.slice(0, n));
  return pos < 0 ? "" : full.slice(0, pos);
}

/** Mirror of `untilCommonPrefix`: the part of `full` after the last occurrence of the common suffix. */
export function afterCommonSuffix(full: string, left: string, right: string): string {
  const n = commonSuffixLength(left, right);
  if (n === 0) return "";
  const common = left.slice(left.length - n);
  const pos = full.lastIndexOf(common);
  return pos < 0 ? "" : full.slice(pos + n);
}
