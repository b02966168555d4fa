import { askSpamd, runSpamAssassin, spamAssassinOnPath, spamStatusOf, spamdAddress } from "@mailroom/kit/spamassassin.js";
import type { SpamScorer } from "../domain/ports.js";

/** How long one scoring may take before the message is received without a score. */
const SCORE_TIMEOUT_MS = 15_000;
/** `spamassassin` runs at once (each a Perl interpreter loading every rule); more waiting messages go unscored. */
const CLI_CONCURRENCY = 2;

/**
 * SpamAssassin for received mail, through the transports the broadcast unit's pre-send check
 * uses (@mailroom/kit/spamassassin): spamd over TCP when MAILROOM_SPAMD_URL names one, else
 * `spamassassin -L` when it is on the PATH (local tests only: no network lookups), else none.
 * Messages over `maxBytes` are not scored (spamc's own default limit is 500 KB: the rules look
 * at headers and the first text); 0 turns it off. Receiving never waits on it for long nor
 * fails by it: a scorer that is busy, slow or broken gives no score.
 */
export function spamScorerFor(opts: { spamdUrl?: string; maxBytes: number }, env: NodeJS.ProcessEnv = process.env): SpamScorer | undefined {
  if (opts.maxBytes <= 0) return undefined;
  if (opts.spamdUrl) return new SpamdScorer(opts.spamdUrl, opts.maxBytes);
  const program = spamAssassinOnPath(env.PATH ?? "");
  return program ? new SpamAssassinCli(program, opts.maxBytes) : undefined;
}

/** The score of `X-Spam-Status: No, score=2.8 required=5.0 …` in the header part. */
export const scoreOfStatus = (output: string): number | undefined => spamStatusOf(output)?.score;

/** `spamassassin -L -t`: the message comes back with X-Spam-Status. */
export class SpamAssassinCli implements SpamScorer {
  private running = 0;

  constructor(readonly program: string, private readonly maxBytes: number) {}

  async score(raw: Uint8Array): Promise<number | undefined> {
    // Busy: received now, unscored, rather than queued behind seconds of Perl per message.
    if (raw.byteLength > this.maxBytes || this.running >= CLI_CONCURRENCY) return undefined;
    this.running++;
    try {
      return scoreOfStatus(await runSpamAssassin(this.program, raw, { timeoutMs: SCORE_TIMEOUT_MS, maxOutputBytes: this.maxBytes * 2 + 1024 * 1024 }));
    } finally {
      this.running--;
    }
  }
}

/** spamd's protocol (SPAMC/1.5 CHECK): the answer's `Spam: True ; 7.1 / 5.0` line. */
export class SpamdScorer implements SpamScorer {
  private readonly address: { host: string; port: number };

  constructor(url: string, private readonly maxBytes: number) {
    this.address = spamdAddress(url);
  }

  async score(raw: Uint8Array): Promise<number | undefined> {
    if (raw.byteLength > this.maxBytes) return undefined;
    return (await askSpamd(this.address, "CHECK", raw, SCORE_TIMEOUT_MS)).score;
  }
}
