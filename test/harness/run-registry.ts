import { appendFileSync } from "node:fs";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { dropTestDatabase } from "./postgres.js";

/**
 * The processes and folders a test run leaves to its end: systems that suites share live as long
 * as their vitest worker, and a worker may end without running any of its files' hooks. Each is
 * noted here as it starts (one line in a file of the run's folder); the global teardown stops and
 * removes whatever is still there.
 */
export const RUN_REGISTRY_VARIABLE = "MAILROOM_TEST_RUN_REGISTRY";

/** `command`: a part of the process's command line, checked before it is killed (pids are reused). */
/** `database`: a PostgreSQL test database (test/harness/postgres.ts), dropped at the run's end. */
export interface RunEndEntry { pid?: number; command?: string; dir?: string; database?: string }

export function registerForRunEnd(entry: RunEndEntry): void {
  const dir = process.env[RUN_REGISTRY_VARIABLE];
  if (!dir) return;
  appendFileSync(path.join(dir, `worker-${process.pid}.jsonl`), `${JSON.stringify(entry)}\n`);
}

export async function openRunRegistry(): Promise<{ dir: string; cleanUp(): Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "mailroom-test-run-"));
  return {
    dir,
    async cleanUp() {
      const entries: RunEndEntry[] = [];
      for (const file of await readdir(dir).catch(() => [])) {
        const text = await readFile(path.join(dir, file), "utf8").catch(() => "");
        for (const line of text.split("\n")) if (line) entries.push(JSON.parse(line));
      }
      for (const e of entries) {
        if (!e.pid) continue;
        try {
          const cmdline = await readFile(`/proc/${e.pid}/cmdline`, "utf8");
          if (!e.command || cmdline.includes(e.command)) process.kill(e.pid, "SIGKILL");
        } catch { /* already gone */ }
      }
      await Promise.all(entries.filter((e) => e.dir).map((e) => rm(e.dir!, { recursive: true, force: true })));
      // A database its system already dropped is no error (IF EXISTS); a server gone is not the run's failure.
      await Promise.all(entries.filter((e) => e.database).map((e) => dropTestDatabase(e.database!).catch(() => undefined)));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
