/**
 * Packrat memo for rule results: an open-addressing hash table over typed arrays, keyed by
 * (rule index, byte position). Cheaper than a `Map` (no boxing, no per-entry objects), and its size
 * follows the number of rule calls, not rules x input length.
 */
export class MemoTable {
  /** entries of other parses (other generations) count as empty, so a table is reused without clearing */
  private gen = 1;
  private keyGen: Int32Array;
  private mask: number;
  private keyPos: Int32Array;
  private keyRule: Int32Array;
  private vStatus: Int32Array;
  private vEnd: Int32Array;
  private vNode: Int32Array;
  private count = 0;
  /** slot of the last successful `find` */
  status = 0;
  end = 0;
  node = 0;

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
  }

  /** Empties the table (O(1): bumps the generation). */
  reset(): void {
    this.count = 0;
    if (++this.gen === 0x7fffffff) {
      this.gen = 1;
      this.keyGen.fill(0);
    }
  }

  private slotOf(rule: number, pos: number): number {
    return (Math.imul(pos, 0x9e3779b1) ^ Math.imul(rule, 0x85ebca77)) & this.mask;
  }

  /** Looks up (rule, pos); on a hit fills `status`/`end`/`node` and returns true. */
  find(rule: number, pos: number): boolean {
    let i = this.slotOf(rule, pos);
    for (;;) {
      if (this.keyGen[i] !== this.gen) return false;
      if (this.keyPos[i] === pos && this.keyRule[i] === rule) {
        this.status = this.vStatus[i]!;
        this.end = this.vEnd[i]!;
        this.node = this.vNode[i]!;
        return true;
      }
      i = (i + 1) & this.mask;
    }
  }

  /** Records a result for a key that is not in the table yet. */
  insert(rule: number, pos: number, status: number, end: number, node: number): void {
    if ((this.count + 1) * 2 > this.mask + 1) this.grow();
    let i = this.slotOf(rule, pos);
    while (this.keyGen[i] === this.gen) i = (i + 1) & this.mask;
    this.keyGen[i] = this.gen;
    this.keyPos[i] = pos;
    this.keyRule[i] = rule;
    this.vStatus[i] = status;
    this.vEnd[i] = end;
    this.vNode[i] = node;
    this.count++;
  }

  private grow(): void {
    const { keyGen, keyPos, keyRule, vStatus, vEnd, vNode, gen } = this;
    const cap = (this.mask + 1) * 2;
    this.mask = cap - 1;
    this.keyGen = new Int32Array(cap);
    this.keyPos = new Int32Array(cap);
    this.keyRule = new Int32Array(cap);
    this.vStatus = new Int32Array(cap);
    this.vEnd = new Int32Array(cap);
    this.vNode = new Int32Array(cap);
    this.count = 0;
    for (let i = 0; i < keyPos.length; i++) {
      if (keyGen[i] === gen) this.insert(keyRule[i]!, keyPos[i]!, vStatus[i]!, vEnd[i]!, vNode[i]!);
    }
  }
}
