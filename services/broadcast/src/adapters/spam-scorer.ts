import { askSpamd, parseRuleTable, runSpamAssassin, spamAssassinOnPath, spamStatusOf, spamdAddress } from "@mailroom/kit/spamassassin.js";
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
  const program = spamAssassinOnPath(env.PATH ?? "");
  if (program) return new SpamAssassinCli(program);
  return { score: async () => ({ scored: false, skipped: HOW_TO_ENABLE }) };
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
      return parseSpamAssassinOutput(await runSpamAssassin(this.program, raw, { timeoutMs: SCORE_TIMEOUT_MS, maxOutputBytes: MAX_OUTPUT }));
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
  const status = spamStatusOf(output);
  if (!status) return { scored: false, failed: true, skipped: "SpamAssassin's answer has no X-Spam-Status header" };
  const report = output.slice(output.lastIndexOf("Content analysis details"));
  return { scored: true, ...status, rules: parseRuleTable(report) };
}

/**
 * spamd's protocol (SPAMC/1.5 REPORT): the message with its length, the answer's `Spam:` line
 * (`True ; 7.1 / 5.0`) and the report (the same table as `spamassassin -t` appends).
 */
export class SpamdScorer implements SpamScorer {
  private readonly address: { host: string; port: number };

  constructor(url: string) {
    this.address = spamdAddress(url);
  }

  async score(message: CheckMessage): Promise<SpamResult> {
    const raw = await checkMime(message);
    try {
      const { score, required, body } = await askSpamd(this.address, "REPORT", raw, SCORE_TIMEOUT_MS);
      return { scored: true, score, required, rules: parseRuleTable(body) };
    } catch (err) {
      return { scored: false, failed: true, skipped: `spamd at ${this.address.host}:${this.address.port} did not score the message: ${(err as Error).message}` };
    }
  }
}
