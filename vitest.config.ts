import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 600_000,
    // Native tests share 2 cores with llama.cpp's own threads; keep file parallelism modest.
    maxWorkers: 2,
  },
});
