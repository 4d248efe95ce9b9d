import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: ["test/support/fast-check-seed.ts"],
    testTimeout: 60_000,
    hookTimeout: 600_000,
    // Native tests share 2 cores with llama.cpp's own threads; keep file parallelism modest.
    maxWorkers: 2,
    // Several test files run at once on few cores: compute threads sleep at barriers instead of
    // spinning (a user's default stays llama.cpp's: OpenMP spins briefly), see docs/bench.md.
    env: { OMP_WAIT_POLICY: process.env.OMP_WAIT_POLICY ?? "passive" },
  },
});
