import type { SendResult } from "../domain/model.js";
import type { WebhookSender } from "../domain/ports.js";

/** Bytes of an answer's body read before it is dropped (receivers are told to answer fast and small). */
const MAX_ERROR_DETAIL = 200;

/**
 * POSTs with Node's fetch (undici: pooled keep-alive connections per origin). Redirects
 * are not followed (a 3xx is a failure: the webhook's URL should be updated instead), and
 * the answer's body is discarded unread unless it explains a failure.
 */
export class FetchWebhookSender implements WebhookSender {
  async post(url: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    try {
      const res = await fetch(url, { method: "POST", headers, body, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
      if (res.status >= 200 && res.status < 300) {
        await res.body?.cancel().catch(() => undefined);
        return { statusCode: res.status, durationMs: elapsed() };
      }
      const text = await res.text().catch(() => "");
      const detail = text.replace(/\s+/g, " ").trim().slice(0, MAX_ERROR_DETAIL);
      return { statusCode: res.status, durationMs: elapsed(), error: `HTTP ${res.status}${detail ? `: ${detail}` : ""}` };
    } catch (err) {
      return { statusCode: 0, durationMs: elapsed(), error: describe(err, timeoutMs) };
    }
  }
}

function describe(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === "TimeoutError" || e?.name === "AbortError") return `timed out after ${timeoutMs} ms`;
  const cause = e?.cause?.code ?? e?.cause?.message;
  return cause ? `connection failed: ${cause}` : `request failed: ${e?.message ?? String(err)}`;
}
