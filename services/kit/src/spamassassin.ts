import { execFile } from "node:child_process";
import { accessSync, constants } from "node:fs";
import net from "node:net";
import path from "node:path";

/**
 * SpamAssassin's two transports, shared by the units that score mail (the broadcast unit's
 * pre-send check, the inbound unit's received mail): the `spamassassin` program and spamd's
 * SPAMC/1.5 protocol over TCP, with the parsers of their answers. What a unit does with a busy,
 * slow or broken scorer (wait, give up, say why) is its own policy, in its adapter.
 */

/** The `spamassassin` program's path when it is on `pathVariable` (a PATH), else undefined. */
export function spamAssassinOnPath(pathVariable: string): string | undefined {
  for (const dir of pathVariable.split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, "spamassassin");
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch { /* not here */ }
  }
  return undefined;
}

/**
 * `spamassassin -L -t` over one message: the message comes back with X-Spam-Status and the
 * report appended. `-L`: local tests only, no network lookups (a second, not the blocklists' time).
 */
export function runSpamAssassin(program: string, raw: Uint8Array, opts: { timeoutMs: number; maxOutputBytes: number }): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const child = execFile(program, ["-L", "-t"], { maxBuffer: opts.maxOutputBytes, timeout: opts.timeoutMs }, (err, out) => (err ? reject(err) : resolve(out)));
    child.stdin?.on("error", () => undefined);
    child.stdin?.end(raw);
  });
}

/** Where a spamd listens: MAILROOM_SPAMD_URL as `tcp://host:port`, `host:port` or `[v6]:port` (port 783 by default). */
export function spamdAddress(url: string): { host: string; port: number } {
  const parsed = new URL(url.includes("://") ? url : `tcp://${url}`);
  return { host: parsed.hostname.replace(/^\[|\]$/g, ""), port: Number(parsed.port || 783) };
}

export interface SpamdAnswer {
  score: number;
  required: number;
  /** What follows the answer's headers: REPORT's table of rules (empty for CHECK). */
  body: string;
}

/**
 * One SPAMC/1.5 exchange with spamd: CHECK answers the score, REPORT the score and the report.
 * Throws when spamd is unreachable, silent past `timeoutMs`, or answers an error.
 */
export async function askSpamd(address: { host: string; port: number }, verb: "CHECK" | "REPORT", raw: Uint8Array, timeoutMs: number): Promise<SpamdAnswer> {
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(address);
    const chunks: Buffer[] = [];
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    socket.on("connect", () => {
      socket.write(`${verb} SPAMC/1.5\r\nContent-length: ${raw.byteLength}\r\nUser: mailroom\r\n\r\n`);
      socket.end(raw);
    });
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    socket.on("error", reject);
  });
  const end = answer.indexOf("\r\n\r\n");
  const head = end >= 0 ? answer.slice(0, end) : answer;
  const first = /^SPAMD\/[\d.]+ (\d+) (.*)$/m.exec(head);
  if (!first || first[1] !== "0") throw new Error(`spamd answered ${first ? `${first[1]} ${first[2]}` : JSON.stringify(head.slice(0, 80))}`);
  const spam = /^Spam: \w+ ; (-?[\d.]+) \/ (-?[\d.]+)/m.exec(head);
  if (!spam) throw new Error("spamd's answer has no Spam header");
  return { score: Number(spam[1]), required: Number(spam[2]), body: answer.slice(head.length).trim() };
}

/** Score and threshold of `X-Spam-Status: No, score=2.8 required=5.0 …` in the message's header part (a body may quote one of its own). */
export function spamStatusOf(output: string): { score: number; required: number } | undefined {
  const headerEnd = output.search(/\r?\n\r?\n/);
  const status = /^X-Spam-Status: .*?score=(-?[\d.]+) required=(-?[\d.]+)/m.exec(headerEnd >= 0 ? output.slice(0, headerEnd) : output);
  return status ? { score: Number(status[1]), required: Number(status[2]) } : undefined;
}

export interface SpamRuleHit {
  name: string;
  score: number;
  description: string;
}

/**
 * The report's table: ` pts rule name              description`, a dashed line, then one
 * rule a line (` 1.7 HTML_IMAGE_ONLY_04     BODY: HTML: images with 0-400 bytes of words`),
 * a long description continued on lines that start with spaces only.
 */
export function parseRuleTable(report: string): SpamRuleHit[] {
  const rules: SpamRuleHit[] = [];
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
