import type { BounceVerdict, Finding } from "./model.js";
import type { Fields, ReadMessage } from "./report.js";

export const DELIVERY_ID_HEADER = "x-mailroom-delivery-id";

/** ARF feedback types that are complaints; not-spam and auth-failure reports are not. */
const COMPLAINT_TYPES = new Set(["abuse", "fraud", "virus", "other"]);

/**
 * What a received message amounts to: a delivery status notification (RFC 3464), a
 * feedback-loop complaint (RFC 5965), a plain-text bounce some MTAs still send, or
 * nothing we act on (an auto-reply, a delay warning).
 */
export function classify(message: ReadMessage): Finding {
  if (message.feedbackReport || message.reportType === "feedback-report") return complaintOf(message);
  if (message.deliveryStatus || message.reportType === "delivery-status") return dsnOf(message.deliveryStatus ?? []);
  return plainBounceOf(message);
}

function dsnOf(groups: Fields[]): Finding {
  // The first group holds the per-message fields; every later one describes one recipient.
  const verdicts = groups.slice(1).filter((g) => g.has("action")).map(verdictOf);
  const failed = verdicts.filter((v) => v.action === "failed");
  const worst = failed.find((v) => v.permanent) ?? failed[0];
  if (worst) return { kind: "bounce", verdict: worst };
  const first = verdicts[0];
  if (first) return { kind: "no-failure", action: first.action, status: first.status };
  return { kind: "ignored", reason: "delivery status without recipient fields" };
}

function verdictOf(group: Fields): BounceVerdict {
  const action = (group.get("action") ?? "").split(/[\s(]/)[0].toLowerCase();
  const status = enhancedStatus(group.get("status") ?? "");
  const diagnostic = typedValue(group.get("diagnostic-code") ?? "");
  const smtpCode = replyCode(diagnostic);
  // Class 5 is permanent; a failed report without a status falls back on the reply code,
  // and a failure with neither is final by definition of "failed".
  const permanent = status ? status.startsWith("5") : smtpCode ? smtpCode >= 500 : true;
  return {
    action,
    status,
    permanent,
    smtpCode,
    diagnostic: diagnostic.slice(0, 1000),
    finalRecipient: typedValue(group.get("final-recipient") ?? ""),
    originalRecipient: typedValue(group.get("original-recipient") ?? ""),
  };
}

function complaintOf(message: ReadMessage): Finding {
  const report = message.feedbackReport ?? new Map<string, string>();
  const feedbackType = (report.get("feedback-type") ?? "").toLowerCase();
  if (!COMPLAINT_TYPES.has(feedbackType)) return { kind: "ignored", reason: `feedback type "${feedbackType || "missing"}"` };
  const original = message.originalHeaders ?? new Map<string, string>();
  return {
    kind: "complaint",
    feedbackType,
    userAgent: report.get("user-agent") ?? "",
    deliveryId: angleless(original.get(DELIVERY_ID_HEADER) ?? ""),
    returnPath: angleless(original.get("return-path") ?? report.get("original-mail-from") ?? ""),
    reportedRecipient: angleless(report.get("original-rcpt-to") ?? ""),
  };
}

const BOUNCE_WORDING =
  /undeliver|delivery (status notification|has failed|failed|failure|problem)|returned mail|failure notice|could not be delivered|mail delivery (failed|subsystem)/i;

/**
 * Bounces that are not DSNs: only a permanent failure (a 5.x.x status in a message worded
 * like a bounce) counts; anything else (auto-replies, delay notes) is left alone.
 */
function plainBounceOf(message: ReadMessage): Finding {
  if (!BOUNCE_WORDING.test(`${message.subject}\n${message.text}`)) return { kind: "ignored", reason: "not a report or bounce" };
  const line = message.text.split(/\r?\n/).find((l) => /(^|[\s:(<[-])5\.\d{1,3}\.\d{1,3}\b/.test(l));
  if (!line) return { kind: "ignored", reason: "bounce without a permanent status" };
  const diagnostic = line.trim().slice(0, 1000);
  return {
    kind: "bounce",
    verdict: {
      action: "failed",
      status: enhancedStatus(diagnostic.replace(/^.*?(?=\b5\.\d{1,3}\.\d{1,3}\b)/, "")),
      permanent: true,
      smtpCode: replyCode(diagnostic.replace(/^.*?(?=\b5\d\d[\s-]+5\.)/, "")),
      diagnostic,
      finalRecipient: "",
      originalRecipient: "",
    },
  };
}

/** "5.1.1 (bad mailbox)" → "5.1.1"; empty unless it is an RFC 3463 code. */
function enhancedStatus(value: string): string {
  return /^\s*([245]\.\d{1,3}\.\d{1,3})\b/.exec(value)?.[1] ?? "";
}

/** "smtp; 550 5.1.1 …" and "rfc822; ann@x" → the part after the type. */
function typedValue(value: string): string {
  const semi = value.indexOf(";");
  return (semi < 0 ? value : value.slice(semi + 1)).trim();
}

/** The SMTP reply code a diagnostic starts with (550), or 0. */
function replyCode(diagnostic: string): number {
  const m = /^\s*([245]\d\d)\b/.exec(diagnostic);
  return m ? Number(m[1]) : 0;
}

function angleless(value: string): string {
  return value.trim().replace(/^<(.*)>$/, "$1").trim();
}

/** The recipient token of an `unsubscribe <token>` subject (a List-Unsubscribe mailto). */
export function unsubscribeTokenInSubject(subject: string): string | undefined {
  return /\bunsubscribe\s+([A-Za-z0-9_.-]+)/i.exec(subject)?.[1];
}
