/**
 * Readiness: whether this process can do its work now. Kit registers what it opens for the
 * process (the NATS connection in connectNats, the store in openStore), so every unit's
 * /readyz checks them without its main.ts naming them; a unit may add its own checks.
 * Liveness (/healthz) stays a plain "the process answers".
 */

/** One dependency: resolves true (or void) when reachable; false or a throw means not ready. */
export interface ReadyCheck {
  name: string;
  check: () => boolean | void | Promise<boolean | void>;
}

export interface ReadyReport {
  ok: boolean;
  /** "ok", or why the check failed. */
  checks: Record<string, string>;
}

const processChecks = new Set<ReadyCheck>();

/** Adds a check every /readyz of this process runs; returns its removal. */
export function registerReadyCheck(check: ReadyCheck): () => void {
  processChecks.add(check);
  return () => processChecks.delete(check);
}

/** The checks kit registered for this process (NATS connections, stores). */
export function processReadyChecks(): ReadyCheck[] {
  return [...processChecks];
}

const CHECK_TIMEOUT_MS = 2_000;

/** Runs the checks at once, each bounded by a timeout. */
export async function checkReadiness(checks: ReadyCheck[], timeoutMs = CHECK_TIMEOUT_MS): Promise<ReadyReport> {
  const results = await Promise.all(
    checks.map(async ({ name, check }): Promise<[string, string]> => {
      let timer: NodeJS.Timeout | undefined;
      try {
        const ok = await Promise.race([
          Promise.resolve().then(check),
          new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs))),
        ]);
        return [name, ok === false ? "not ready" : "ok"];
      } catch (err) {
        return [name, err instanceof Error ? err.message : String(err)];
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  // Two checks of one name (two stores, say) are reported under numbered names.
  const report: Record<string, string> = {};
  for (const [name, result] of results) {
    let key = name;
    for (let i = 2; key in report; i++) key = `${name}#${i}`;
    report[key] = result;
  }
  return { ok: results.every(([, r]) => r === "ok"), checks: report };
}
