import { execFile } from "node:child_process";
import { accessSync, constants } from "node:fs";
import net from "node:net";
import path from "node:path";
import type { SpamScorer } from "../domain/ports.js";

/** How long one scoring may take before the message is received without a score. */
const SCORE_TIMEOUT_MS = 15_000;
/** `spamassassin` runs at once (each a Perl interpreter loading every rule); more waiting messages go unscored. */
const CLI_CONCURRENCY = 2;

/**
 * SpamAssassin for received mail, as the broadcast unit's pre-send check runs it: spamd over
 * TCP when MAILROOM_SPAMD_URL names one, else `spamassassin -L` when it is on the PATH (local
 * tests only: no network lookups), else none. Messages over `maxBytes` are not scored (spamc's
 * own default limit is 500 KB: the rules look at headers and the first text); 0 turns it off.
 * Receiving never waits on it for long nor fails by it: a scorer that is busy, slow or broken
 * gives no score.
 */
export function spamScorerFor(opts: { spamdUrl?: string; maxBytes: number }, env: NodeJS.ProcessEnv = process.env): SpamScorer | undefined {
  if (opts.maxBytes <= 0) return undefined;
  if (opts.spamdUrl) return new SpamdScorer(opts.spamdUrl, opts.maxBytes);
  const program = findOnPath("spamassassin", env.PATH ?? "");
  return program ? new SpamAssassinCli(program, opts.maxBytes) : undefined;
}

function findOnPath(program: string, pathVariable: string): string | undefined {
  for (const dir of pathVariable.split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, program);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch { /* not here */ }
  }
  return undefined;
}

/** The score of `X-Spam-Status: No, score=2.8 required=5.0 …`. */
export function scoreOfStatus(output: string): number | undefined {
  const status = /^X-Spam-Status: .*?score=(-?[\d.]+)/m.exec(output);
  return status ? Number(status[1]) : undefined;
}

/** `spamassassin -L -t`: the message comes back with X-Spam-Status. */
export class SpamAssassinCli implements SpamScorer {
  private running = 0;

  constructor(readonly program: string, private readonly maxBytes: number) {}

  async score(raw: Uint8Array): Promise<number | undefined> {
    // Busy: received now, unscored, rather than queued behind seconds of Perl per message.
    if (raw.byteLength > this.maxBytes || this.running >= CLI_CONCURRENCY) return undefined;
    this.running++;
    try {
      const stdout = await new Promise<string>((resolve, reject) => {
        const child = execFile(this.program, ["-L", "-t"], { maxBuffer: this.maxBytes * 2 + 1024 * 1024, timeout: SCORE_TIMEOUT_MS }, (err, out) => (err ? reject(err) : resolve(out)));
        child.stdin?.on("error", () => undefined);
        child.stdin?.end(raw);
      });
      // The header part only: the body may quote an X-Spam-Status of its own.
      return scoreOfStatus(stdout.slice(0, Math.max(0, stdout.search(/\r?\n\r?\n/))));
    } finally {
      this.running--;
    }
  }
}

/** spamd's protocol (SPAMC/1.5 CHECK): the answer's `Spam: True ; 7.1 / 5.0` line. */
export class SpamdScorer implements SpamScorer {
  private readonly host: string;
  private readonly port: number;

  constructor(url: string, private readonly maxBytes: number) {
    const parsed = new URL(url.includes("://") ? url : `tcp://${url}`);
    this.host = parsed.hostname.replace(/^\[|\]$/g, "");
    this.port = Number(parsed.port || 783);
  }

  async score(raw: Uint8Array): Promise<number | undefined> {
    if (raw.byteLength > this.maxBytes) return undefined;
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect({ host: this.host, port: this.port });
      const chunks: Buffer[] = [];
      socket.setTimeout(SCORE_TIMEOUT_MS, () => socket.destroy(new Error(`spamd gave no answer within ${SCORE_TIMEOUT_MS} ms`)));
      socket.on("connect", () => {
        socket.write(`CHECK SPAMC/1.5\r\nContent-length: ${raw.byteLength}\r\nUser: mailroom\r\n\r\n`);
        socket.end(raw);
      });
      socket.on("data", (c: Buffer) => chunks.push(c));
      socket.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
      socket.on("error", reject);
    });
    const first = /^SPAMD\/[\d.]+ (\d+) (.*)$/m.exec(answer);
    if (!first || first[1] !== "0") throw new Error(`spamd answered ${first ? `${first[1]} ${first[2]}` : JSON.stringify(answer.slice(0, 80))}`);
    const spam = /^Spam: \w+ ; (-?[\d.]+) \/ (-?[\d.]+)/m.exec(answer);
    if (!spam) throw new Error("spamd's answer has no Spam header");
    return Number(spam[1]);
  }
}
