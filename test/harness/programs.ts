import { accessSync, constants } from "node:fs";
import path from "node:path";

/**
 * The programs the suites start and the Debian package of each: the same table as
 * `.ci/system-packages`, which installs them. A suite asks here first, so a missing program fails
 * (or, outside CI, skips where the suite allows it) with a line naming the package, never ENOENT.
 */
export const PROGRAM_PACKAGES = {
  "nats-server": "nats-server",
  swaks: "swaks",
  spamassassin: "spamassassin",
  chromium: "chromium",
  promtool: "prometheus",
  openssl: "openssl",
  script: "bsdutils",
  mount: "mount",
  umount: "mount",
} as const;
export type Program = keyof typeof PROGRAM_PACKAGES;

/** The program's path on PATH (and the sbin folders Debian uses for servers), or undefined. */
export function findProgram(program: Program): string | undefined {
  const dirs = [...(process.env.PATH ?? "").split(path.delimiter), "/usr/sbin", "/usr/bin", "/sbin", "/bin"];
  for (const dir of dirs) {
    if (!dir) continue;
    const candidate = path.join(dir, program);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch { /* not here */ }
  }
  return undefined;
}

export function missingProgramMessage(program: Program): string {
  return `${program} is not installed: apt-get install ${PROGRAM_PACKAGES[program]} (bash .ci/system-packages installs every program the suites start)`;
}

/** The program's path; throws naming its package when the machine lacks it. */
export function requireProgram(program: Program): string {
  const found = findProgram(program);
  if (!found) throw new Error(missingProgramMessage(program));
  return found;
}

/**
 * For suites that may skip where a program is missing: true when present. Under CI a missing
 * program is an error instead (a skipped suite would hide a broken install step).
 */
export function optionalProgram(program: Program, suite: string): boolean {
  if (findProgram(program)) return true;
  if (process.env.CI) throw new Error(`${suite}: ${missingProgramMessage(program)}`);
  console.log(`${suite}: skipped, ${missingProgramMessage(program)}`);
  return false;
}
