// The addon binds the C++ template code it defines itself (std::regex, the rest of libstdc++'s
// header code) inside itself: Node 22 exports its own std::regex instantiations, built without
// exceptions, and an addon that let them interpose aborted on the first invalid pattern
// (docs/grammar-engine.md, "Node 22"). The link flag that prevents it (-Bsymbolic) shows in the
// ELF dynamic section: DT_SYMBOLIC, or DF_SYMBOLIC in DT_FLAGS.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

import { systemInfo } from "../../lib/native/load.js";

const PT_DYNAMIC = 2;
const DT_SYMBOLIC = 16;
const DT_FLAGS = 30;
const DF_SYMBOLIC = 0x2;

/** The dynamic section's tags of a 64-bit little-endian ELF file. */
function dynamicTags(file: Buffer): Map<number, bigint[]> {
  expect(file.subarray(0, 4).toString("latin1"), "an ELF file").toBe("\x7fELF");
  expect(file[4], "ELF64").toBe(2);
  expect(file[5], "little-endian").toBe(1);
  const phoff = Number(file.readBigUInt64LE(0x20));
  const phentsize = file.readUInt16LE(0x36);
  const phnum = file.readUInt16LE(0x38);
  const tags = new Map<number, bigint[]>();
  for (let i = 0; i < phnum; i++) {
    const ph = phoff + i * phentsize;
    if (file.readUInt32LE(ph) !== PT_DYNAMIC) continue;
    const offset = Number(file.readBigUInt64LE(ph + 8));
    const size = Number(file.readBigUInt64LE(ph + 32));
    for (let at = offset; at + 16 <= offset + size; at += 16) {
      const tag = Number(file.readBigInt64LE(at));
      if (tag === 0) break;
      tags.set(tag, [...(tags.get(tag) ?? []), file.readBigUInt64LE(at + 8)]);
    }
  }
  return tags;
}

describe("addon link", () => {
  it.skipIf(process.platform !== "linux" || process.arch !== "x64" && process.arch !== "arm64")(
    "the .node binds its own symbols first (-Bsymbolic), so the host's C++ copies cannot interpose",
    () => {
      const path = systemInfo().binary.path;
      const tags = dynamicTags(readFileSync(path));
      expect(tags.size, `${path} has a dynamic section`).toBeGreaterThan(0);
      const symbolic = tags.has(DT_SYMBOLIC) || (tags.get(DT_FLAGS) ?? []).some((v) => (v & BigInt(DF_SYMBOLIC)) !== 0n);
      expect(symbolic, `${path}: neither DT_SYMBOLIC nor DF_SYMBOLIC (link it with -Wl,-Bsymbolic)`).toBe(true);
    },
  );
});
