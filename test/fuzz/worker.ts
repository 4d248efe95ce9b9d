// The fuzz child: runs the cases of one class from `first` on, printing "S <i>" before and
// "R <i> <json>" after each (test/fuzz/child.ts reads them). The cases are made here from the
// seed, so the parent sends three numbers, not the corpus.
// Usage: node --import ./test/fuzz/ts-register.mjs test/fuzz/worker.ts <class> <seed> <size> <first> [raw]
import type { FuzzClass } from "./classes.js";

const [name, seedArg, size, firstArg, mode] = process.argv.slice(2);
const mod = (await import(`./${name}-class.js`)) as { fuzzClass: FuzzClass<unknown> };
const cls = mod.fuzzClass;
const cases = await cls.cases(Number(seedArg), size === "long" ? "long" : "ci");
const raw = mode === "raw";
for (let i = Number(firstArg); i < cases.length; i++) {
  process.stdout.write(`S ${i}\n`);
  const t0 = process.hrtime.bigint();
  const cpu0 = process.cpuUsage();
  let result: Record<string, unknown>;
  try {
    result = { outcome: "ok", ...((await cls.run(cases[i], { raw })) ?? {}) };
  } catch (e) {
    const code = (e as { code?: unknown })?.code;
    const message = String((e as Error)?.message ?? e);
    // an argument check's TypeError/RangeError (the library's convention) is deliberate; a stack
    // overflow's RangeError is not
    const argument = (e instanceof TypeError || e instanceof RangeError) && !/call stack/i.test(message);
    result =
      typeof code === "string" && code.startsWith("ERR_")
        ? { outcome: "coded", code }
        : argument
          ? { outcome: "argument", error: `${(e as Error).name}: ${message.slice(0, 200)}` }
          : { outcome: "uncoded", error: `${(e as Error)?.name}: ${message.slice(0, 300)}` };
  }
  result.ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const cpu = process.cpuUsage(cpu0);
  result.cpuMs = (cpu.user + cpu.system) / 1000;
  result.rssKb = process.resourceUsage().maxRSS;
  process.stdout.write(`R ${i} ${JSON.stringify(result)}\n`);
}
await cls.close?.();
process.exit(0);
