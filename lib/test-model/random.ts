/** Small deterministic PRNG (mulberry32) and helpers to fill weight buffers from it. */

export type Rng = () => number;

/** Uniform in [0, 1) from a 32-bit seed. Fast, tiny, and identical on every platform. */
export function mulberry32(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** FNV-1a over a string's UTF-16 units: a stable per-tensor seed from (model seed, tensor name). */
export function hashSeed(seed: number, name: string): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** Fills `out` with uniform values of mean `mean` and standard deviation `std`. */
export function fillUniform(out: Float32Array, rng: Rng, std: number, mean = 0): void {
  const halfWidth = std * Math.sqrt(3); // uniform on [-w, w] has std w/sqrt(3)
  for (let i = 0; i < out.length; i++) out[i] = mean + (rng() * 2 - 1) * halfWidth;
}

/** float32 -> IEEE half bits, round to nearest even (what ggml's converter does on normal values). */
export function float32ToFloat16Bits(src: Float32Array, dst: Uint16Array): void {
  const bits = new Uint32Array(src.buffer, src.byteOffset, src.length);
  for (let i = 0; i < src.length; i++) {
    const b = bits[i] as number;
    const sign = (b >>> 16) & 0x8000;
    const exp = (b >>> 23) & 0xff;
    let mant = b & 0x7fffff;
    if (exp === 0xff) {
      dst[i] = sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
      continue;
    }
    const e = exp - 127 + 15;
    if (e >= 0x1f) {
      dst[i] = sign | 0x7c00;
    } else if (e <= 0) {
      if (e < -10) {
        dst[i] = sign;
        continue;
      }
      mant |= 0x800000;
      const shift = 14 - e;
      let h = mant >>> shift;
      const rem = mant & ((1 << shift) - 1);
      const halfway = 1 << (shift - 1);
      if (rem > halfway || (rem === halfway && (h & 1) === 1)) h++;
      dst[i] = sign | h;
    } else {
      let h = (e << 10) | (mant >>> 13);
      const rem = mant & 0x1fff;
      if (rem > 0x1000 || (rem === 0x1000 && (h & 1) === 1)) h++; // may carry into the exponent: correct
      dst[i] = sign | h;
    }
  }
}
