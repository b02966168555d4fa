import http from "node:http";
import https from "node:https";
import net from "node:net";
import type { SendResult } from "../domain/model.js";
import type { WebhookSender } from "../domain/ports.js";
import { hostOf, NetworkPolicy, TargetRefusedError } from "./network-policy.js";

/** Bytes of an answer's body read before it is dropped (receivers are told to answer fast and small). */
const MAX_ERROR_DETAIL = 200;
/** Bytes of a failure's body kept to explain it. */
const MAX_ERROR_BODY = 4096;

/**
 * POSTs with node:http(s) over keep-alive agents whose `lookup` is the network policy's:
 * every connection resolves the host and checks the addresses it gets before connecting, so
 * the address connected to is the one checked (a literal address is checked before the
 * request). A refused target is a permanent failure. Redirects are never followed (a 3xx is
 * a failure: the webhook's URL should be updated instead), and the answer's body is
 * discarded unread unless it explains a failure.
 */
export class HttpWebhookSender implements WebhookSender {
  private readonly agents: { http: http.Agent; https: https.Agent };

  constructor(private readonly policy: NetworkPolicy = new NetworkPolicy()) {
    const lookup = policy.connectLookup;
    this.agents = { http: new http.Agent({ keepAlive: true, lookup } as http.AgentOptions), https: new https.Agent({ keepAlive: true, lookup } as https.AgentOptions) };
  }

  async post(url: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return { statusCode: 0, durationMs: elapsed(), error: "refused: the URL is not valid", permanent: true };
    }
    const host = hostOf(url);
    if (net.isIP(host)) {
      // node:net does not look a literal address up: check it here.
      const why = this.policy.refusalOf(host);
      if (why) return refused(why, elapsed());
    }
    const secure = target.protocol === "https:";
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = (secure ? https : http).request(
          target,
          {
            method: "POST",
            headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
            agent: secure ? this.agents.https : this.agents.http,
            lookup: this.policy.connectLookup,
            signal,
          },
          (res) => {
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) {
              res.resume();
              res.on("end", () => resolve({ status, text: "" }));
              res.on("error", reject);
              res.on("close", () => resolve({ status, text: "" }));
              return;
            }
            const chunks: Buffer[] = [];
            let size = 0;
            res.on("data", (c: Buffer) => {
              if (size < MAX_ERROR_BODY) chunks.push(c);
              size += c.length;
            });
            res.on("end", () => resolve({ status, text: Buffer.concat(chunks).toString("utf8") }));
            const settle = () => resolve({ status, text: Buffer.concat(chunks).toString("utf8") });
            res.on("error", settle);
            res.on("close", settle);
          },
        );
        req.on("error", reject);
        req.end(body);
      });
      if (status >= 200 && status < 300) return { statusCode: status, durationMs: elapsed() };
      if (status >= 300 && status < 400) {
        return { statusCode: status, durationMs: elapsed(), error: `HTTP ${status}: redirects are not followed; point the webhook at the final URL` };
      }
      const detail = text.replace(/\s+/g, " ").trim().slice(0, MAX_ERROR_DETAIL);
      return { statusCode: status, durationMs: elapsed(), error: `HTTP ${status}${detail ? `: ${detail}` : ""}` };
    } catch (err) {
      if (err instanceof TargetRefusedError) return refused(err.message, elapsed());
      return { statusCode: 0, durationMs: elapsed(), error: describe(err, timeoutMs, signal.aborted) };
    }
  }

  /** Closes the pooled connections. */
  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}

function refused(why: string, durationMs: number): SendResult {
  return {
    statusCode: 0,
    durationMs,
    error: `refused: ${why}; webhooks may only target public addresses (the server's operator can trust a network with MAILROOM_WEBHOOK_ALLOW_NETWORKS)`,
    permanent: true,
  };
}

function describe(err: unknown, timeoutMs: number, timedOut: boolean): string {
  const e = err as { name?: string; message?: string; code?: string; cause?: { code?: string; message?: string } };
  if (timedOut || e?.name === "TimeoutError" || e?.name === "AbortError") return `timed out after ${timeoutMs} ms`;
  const cause = e?.code ?? e?.cause?.code ?? e?.cause?.message;
  return cause ? `connection failed: ${cause}` : `request failed: ${e?.message ?? String(err)}`;
}
