/**
 * Packrat memo for rule results: an open-addressing hash table over typed arrays, keyed by
 * (rule index, byte position). Cheaper than a `Map` (no boxing, no per-entry objects), and its size
 * follows the number of rule calls, not rules x input length.
 *
 * Entries also record whether computing them looked at the end of the input. That makes them
 * reusable by a later parse of a longer input with the same prefix (streaming): an entry that never
 * saw the end depends only on bytes that did not change.
 */
export class MemoTable {
  /** table generation: slots of other generations are empty, so a reset is O(1) */
  private gen = 1;
  /** parse number inside a generation: entries that saw the end are valid only in their own parse */
  private parse = 0;
  private mask: number;
  private keyGen: Int32Array;
  private keyPos: Int32Array;
  private keyRule: Int32Array;
  private vStatus: Int32Array;
  private vEnd: Int32Array;
  private vNode: Int32Array;
  private vParse: Int32Array;
  private vEof: Uint8Array;
  private count = 0;
  /** result of the last successful `find` */
  status = 0;
  end = 0;
  node = 0;
  eof = false;
  /** whether the last `findAny` hit was recorded during the current parse */
  current = false;

  constructor(capacity = 256) {
    let cap = 16;
    while (cap < capacity) cap *= 2;
    this.mask = cap - 1;
    this.keyGen = new Int32Array(cap);
    this.keyPos = new Int32Array(cap);
    this.keyRule = new Int32Array(cap);
    this.vStatus = new Int32Array(cap);
    this.vEnd = new Int32Array(cap);
    this.vNode = new Int32Array(cap);
    this.vParse = new Int32Array(cap);
    this.vEof = new Uint8Array(cap);
  }

  /** Empties the table (O(1): bumps the generation). */
  reset(): void {
    this.count = 0;
    this.parse = 0;
    if (++this.gen === 0x7fffffff) {
      this.gen = 1;
      this.keyGen.fill(0);
    }
  }

  /** Starts the parse of a longer input with the same prefix: entries that saw the end stop counting. */
  nextParse(): void {
    this.parse++;
  }

  private slotOf(rule: number, pos: number): number {
    return (Math.imul(pos, 0x9e3779b1) ^ Math.imul(rule, 0x85ebca77)) & this.mask;
  }

  /** Looks up (rule, pos); on a hit fills `status`/`end`/`node`/`eof` and returns true. */
  find(rule: number, pos: number): boolean {
    let i = this.slotOf(rule, pos);
    for (;;) {
      if (this.keyGen[i] !== this.gen) return false;
      if (this.keyPos[i] === pos && this.keyRule[i] === rule) {
        const eof = this.vEof[i] === 1;
        if (eof && this.vParse[i] !== this.parse) return false; // computed on a shorter input
        this.status = this.vStatus[i]!;
        this.end = this.vEnd[i]!;
        this.node = this.vNode[i]!;
        this.eof = eof;
        return true;
      }
      i = (i + 1) & this.mask;
    }
  }

  /**
   * Looks up (key, pos) whatever parse recorded it, for leaves that resume an end-of-input scan
   * (see leaves.ts); fills `status`/`end`/`node`/`eof`/`current` and returns true on a hit.
   */
  findAny(rule: number, pos: number): boolean {
    let i = this.slotOf(rule, pos);
    for (;;) {
      if (this.keyGen[i] !== this.gen) return false;
      if (this.keyPos[i] === pos && this.keyRule[i] === rule) {
        this.status = this.vStatus[i]!;
        this.end = this.vEnd[i]!;
        this.node = this.vNode[i]!;
        this.eof = this.vEof[i] === 1;
        this.current = this.vParse[i] === this.parse;
        return true;
      }
      i = (i + 1) & this.mask;
    }
  }

  /** Records a result (replacing a stale one for the same key). */
  insert(rule: number, pos: number, status: number, end: number, node: number, eof: boolean): void {
    if ((this.count + 1) * 2 > this.mask + 1) this.grow();
    let i = this.slotOf(rule, pos);
    while (this.keyGen[i] === this.gen) {
      if (this.keyPos[i] === pos && this.keyRule[i] === rule) break;
      i = (i + 1) & this.mask;
    }
    if (this.keyGen[i] !== this.gen) this.count++;
    this.keyGen[i] = this.gen;
    this.keyPos[i] = pos;
    this.keyRule[i] = rule;
    this.vStatus[i] = status;
    this.vEnd[i] = end;
    this.vNode[i] = node;
    this.vParse[i] = this.parse;
    this.vEof[i] = eof ? 1 : 0;
  }

  private grow(): void {
    const { keyGen, keyPos, keyRule, vStatus, vEnd, vNode, vParse, vEof, gen, parse } = this;
    const cap = (this.mask + 1) * 2;
    this.mask = cap - 1;
    this.keyGen = new Int32Array(cap);
    this.keyPos = new Int32Array(cap);
    this.keyRule = new Int32Array(cap);
    this.vStatus = new Int32Array(cap);
    this.vEnd = new Int32Array(cap);
    this.vNode = new Int32Array(cap);
    this.vParse = new Int32Array(cap);
    this.vEof = new Uint8Array(cap);
    this.count = 0;
    for (let i = 0; i < keyPos.length; i++) {
      if (keyGen[i] !== gen) continue;
      this.parse = vParse[i]!;
      this.insert(keyRule[i]!, keyPos[i]!, vStatus[i]!, vEnd[i]!, vNode[i]!, vEof[i] === 1);
    }
    this.parse = parse;
  }
}
