import { execFile } from "node:child_process";
import { accessSync, constants } from "node:fs";
import net from "node:net";
import path from "node:path";
import type { CheckMessage, SpamResult, SpamRule, SpamScorer } from "../domain/check/ports.js";
import { checkMime } from "./check-mime.js";

/** How long one scoring may take (a check answers within the callers' 30 s). */
const SCORE_TIMEOUT_MS = 20_000;
/** spamassassin runs at once per process (each is a Perl interpreter loading every rule). */
const CLI_CONCURRENCY = 2;
const MAX_OUTPUT = 16 * 1024 * 1024;

export const HOW_TO_ENABLE =
  "SpamAssassin is not available: install it on the broadcast unit's machine (Debian: `sudo apt-get install -y spamassassin`, then `spamassassin` is on the PATH) or point MAILROOM_SPAMD_URL at a spamd (e.g. tcp://127.0.0.1:783).";

/**
 * The spam filter of a pre-send check (DESIGN §10.5): spamd over TCP when MAILROOM_SPAMD_URL
 * names one, else the `spamassassin` program when it is on the PATH (`-L`: local tests only,
 * no network lookups, so a check takes a second, not the DNS blocklists' time), else none:
 * the check says how to enable it.
 */
export function spamScorerFor(spamdUrl: string | undefined, env: NodeJS.ProcessEnv = process.env): SpamScorer {
  if (spamdUrl) return new SpamdScorer(spamdUrl);
  const program = findOnPath("spamassassin", env.PATH ?? "");
  if (program) return new SpamAssassinCli(program);
  return { score: async () => ({ scored: false, skipped: HOW_TO_ENABLE }) };
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

/** `spamassassin -L -t`: the message back with X-Spam-Status and the report appended. */
export class SpamAssassinCli implements SpamScorer {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly program: string) {}

  async score(message: CheckMessage): Promise<SpamResult> {
    const raw = await checkMime(message);
    await this.slot();
    try {
      const stdout = await new Promise<string>((resolve, reject) => {
        const child = execFile(this.program, ["-L", "-t"], { maxBuffer: MAX_OUTPUT, timeout: SCORE_TIMEOUT_MS }, (err, out) => (err ? reject(err) : resolve(out)));
        child.stdin?.on("error", () => undefined);
        child.stdin?.end(raw);
      });
      return parseSpamAssassinOutput(stdout);
    } catch (err) {
      return { scored: false, failed: true, skipped: `SpamAssassin did not score the message: ${(err as Error).message.split("\n")[0]}` };
    } finally {
      this.release();
    }
  }

  private async slot(): Promise<void> {
    if (this.running < CLI_CONCURRENCY) {
      this.running++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running--;
  }
}

/** Score and rules from `spamassassin -t` output: X-Spam-Status's score, the report's table of rules. */
export function parseSpamAssassinOutput(output: string): SpamResult {
  const status = /^X-Spam-Status: .*?score=(-?[\d.]+) required=(-?[\d.]+)/m.exec(output);
  if (!status) return { scored: false, failed: true, skipped: "SpamAssassin's answer has no X-Spam-Status header" };
  const report = output.slice(output.lastIndexOf("Content analysis details"));
  return { scored: true, score: Number(status[1]), required: Number(status[2]), rules: parseRuleTable(report) };
}

/**
 * The report's table: ` pts rule name              description`, a dashed line, then one
 * rule a line (` 1.7 HTML_IMAGE_ONLY_04     BODY: HTML: images with 0-400 bytes of words`),
 * a long description continued on lines that start with spaces only.
 */
export function parseRuleTable(report: string): SpamRule[] {
  const rules: SpamRule[] = [];
  const lines = report.split(/\r?\n/);
  const start = lines.findIndex((l) => /^-{3,} -{3,}/.test(l));
  if (start < 0) return rules;
  for (const line of lines.slice(start + 1)) {
    const rule = /^\s*(-?\d+(?:\.\d+)?)\s+([A-Z0-9_]+)\s+(.*)$/.exec(line);
    if (rule) {
      rules.push({ name: rule[2], score: Number(rule[1]) || 0, description: rule[3].trim() });
    } else if (/^\s{10,}\S/.test(line) && rules.length) {
      rules[rules.length - 1].description += ` ${line.trim()}`;
    } else if (line.trim() === "" || !/^\s/.test(line)) {
      break;
    }
  }
  return rules;
}

/**
 * spamd's protocol (SPAMC/1.5 REPORT): the message with its length, the answer's `Spam:` line
 * (`True ; 7.1 / 5.0`) and the report (the same table as `spamassassin -t` appends).
 */
export class SpamdScorer implements SpamScorer {
  private readonly host: string;
  private readonly port: number;

  constructor(url: string) {
    const parsed = new URL(url.includes("://") ? url : `tcp://${url}`);
    this.host = parsed.hostname.replace(/^\[|\]$/g, "");
    this.port = Number(parsed.port || 783);
  }

  async score(message: CheckMessage): Promise<SpamResult> {
    const raw = await checkMime(message);
    try {
      const answer = await this.exchange(raw);
      const head = answer.slice(0, answer.indexOf("\r\n\r\n") >= 0 ? answer.indexOf("\r\n\r\n") : answer.length);
      const body = answer.slice(head.length).trim();
      const first = /^SPAMD\/[\d.]+ (\d+) (.*)$/m.exec(head);
      if (!first || first[1] !== "0") throw new Error(`spamd answered ${first ? `${first[1]} ${first[2]}` : JSON.stringify(head.slice(0, 80))}`);
      const spam = /^Spam: \w+ ; (-?[\d.]+) \/ (-?[\d.]+)/m.exec(head);
      if (!spam) throw new Error("spamd's answer has no Spam header");
      return { scored: true, score: Number(spam[1]), required: Number(spam[2]), rules: parseRuleTable(body) };
    } catch (err) {
      return { scored: false, failed: true, skipped: `spamd at ${this.host}:${this.port} did not score the message: ${(err as Error).message}` };
    }
  }

  private exchange(raw: Buffer): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: this.host, port: this.port });
      const chunks: Buffer[] = [];
      socket.setTimeout(SCORE_TIMEOUT_MS, () => socket.destroy(new Error(`no answer within ${SCORE_TIMEOUT_MS} ms`)));
      socket.on("connect", () => {
        socket.write(`REPORT SPAMC/1.5\r\nContent-length: ${raw.length}\r\nUser: mailroom\r\n\r\n`);
        socket.end(raw);
      });
      socket.on("data", (c: Buffer) => chunks.push(c));
      socket.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
      socket.on("error", reject);
    });
  }
}
