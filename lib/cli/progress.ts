/** A one-line progress bar on stderr (only when stderr is a terminal). */
export function progressBar(label: string): { update(fraction: number): void; done(): void } {
  const tty = process.stderr.isTTY === true;
  let last = -1;
  return {
    update(fraction: number) {
      if (!tty) return;
      const pct = Math.max(0, Math.min(100, Math.floor(fraction * 100)));
      if (pct === last) return;
      last = pct;
      const width = 30;
      const filled = Math.round((pct / 100) * width);
      process.stderr.write(`\r${label} [${"#".repeat(filled)}${"-".repeat(width - filled)}] ${String(pct).padStart(3)}%`);
    },
    done() {
      if (tty && last >= 0) process.stderr.write("\n");
    },
  };
}
