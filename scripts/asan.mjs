#!/usr/bin/env node
// The addon under AddressSanitizer + UndefinedBehaviorSanitizer: builds it into build-asan/ (the
// addon's own code instrumented; llama.cpp and ggml too with LLAMAPEG_SANITIZE_LLAMA=1, a full
// compile) and runs Node scripts or the lifecycle stress test against it with libasan preloaded.
//   node scripts/asan.mjs build                 configure + build build-asan/ (incremental)
//   node scripts/asan.mjs stress [N] [--hog]    the worker.terminate() stress fixture, N workers
//                                               (default 60); --hog keeps both cores busy meanwhile
//   node scripts/asan.mjs run <script> [args]   any Node script with the ASan addon
// Exit status: the script's; a sanitizer report fails it (ASan aborts, UBSan does not recover).
// docs/contexts.md, "Memory-safety builds", says what it found and how to read a report.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "build-asan");
const addon = join(out, "Release", "llamapeg.node");
const [command = "stress", ...rest] = process.argv.slice(2);
const log = (m) => console.error(`[llamapeg asan] ${m}`);

/** libasan as the compiler that built the addon links it (it must be the first library loaded). */
function libasan() {
  const cc = process.env.CC || "gcc";
  const r = spawnSync(cc, ["-print-file-name=libasan.so"], { encoding: "utf8" });
  const path = r.status === 0 ? r.stdout.trim() : "";
  if (!path || !existsSync(path)) throw new Error(`libasan.so not found through ${cc} -print-file-name (install libasan / gcc)`);
  return path;
}

function sanitizerEnv() {
  return {
    ...process.env,
    LD_PRELOAD: [libasan(), process.env.LD_PRELOAD].filter(Boolean).join(":"),
    LLAMAPEG_NATIVE_PATH: addon,
    // V8 and Node keep memory to exit; leaks are not what this looks for. Node installs its own
    // SEGV handler, so ASan must not take it over.
    ASAN_OPTIONS: process.env.ASAN_OPTIONS ?? "detect_leaks=0:abort_on_error=1:handle_segv=0:allow_user_segv_handler=1:print_summary=1",
    UBSAN_OPTIONS: process.env.UBSAN_OPTIONS ?? "print_stacktrace=1:halt_on_error=1",
  };
}

function build() {
  const env = { ...process.env, LLAMAPEG_SANITIZE: process.env.LLAMAPEG_SANITIZE ?? "address,undefined" };
  execFileSync(process.execPath, [join(root, "scripts", "build-native.mjs"), "--out", out], { stdio: "inherit", cwd: root, env });
}

function run(args) {
  if (!existsSync(addon)) {
    log(`${addon} is not built: run \`node scripts/asan.mjs build\` first`);
    process.exit(2);
  }
  if (!existsSync(join(root, "dist", "native", "load.js"))) {
    log("dist/ is not built: run `npm run build:ts` first");
    process.exit(2);
  }
  const r = spawnSync(process.execPath, args, { stdio: "inherit", cwd: root, env: sanitizerEnv() });
  if (r.signal) log(`${args.join(" ")}: killed by ${r.signal} (a sanitizer report is above)`);
  return r.status ?? 1;
}

async function stress(args) {
  const iterations = args.find((a) => /^\d+$/.test(a)) ?? "60";
  const { ensureTestModel } = await import(join(root, "dist", "test-model", "index.js"));
  const model = await ensureTestModel("tiny");
  const hogs = [];
  if (args.includes("--hog")) {
    // A loaded machine: one busy process per core, so the load, the decode thread and teardown
    // interleave at the scheduler's whim (the window the original crash needed).
    for (let i = 0; i < availableParallelism(); i++) {
      hogs.push(spawn(process.execPath, ["-e", "for(;;){}"], { stdio: "ignore" }));
    }
  }
  try {
    const fixture = join(root, "test", "model", "fixtures", "terminate-workers.mjs");
    return run([fixture, root, model, iterations]);
  } finally {
    for (const h of hogs) h.kill();
  }
}

if (command === "build") {
  build();
} else if (command === "run") {
  process.exitCode = run(rest);
} else if (command === "stress") {
  process.exitCode = await stress(rest);
} else {
  log(`unknown command ${command}: build | stress [N] [--hog] | run <script> [args]`);
  process.exitCode = 2;
}
