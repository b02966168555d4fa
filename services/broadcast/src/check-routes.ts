import type { ConnectRouter } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { PreSendCheckService, type PreSendCheckSchema } from "@mailroom/proto/broadcast/v1/check_pb.js";
import { badRequest } from "@mailroom/kit/errors.js";
import type { CheckResult, PreSendCheck } from "./domain/check/pre-send-check.js";

/** A rendered message a caller hands in: 5 MB of HTML at most, as an email's. */
const CONTENT_MAX_BYTES = 5 * 1024 * 1024;
// CR, LF and other controls would break a header line of the message scored.
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/;

/** The Connect PreSendCheckService (DESIGN §10.5): proto in, proto out. */
export function checkRoutes(checks: PreSendCheck) {
  return (router: ConnectRouter) =>
    router.service(PreSendCheckService, {
      async checkBroadcast(req) {
        return { check: checkToPb(await checks.checkBroadcast(req.workspaceId, req.id)) };
      },

      async checkContent(req) {
        if (Buffer.byteLength(req.html, "utf8") + Buffer.byteLength(req.text, "utf8") > CONTENT_MAX_BYTES) {
          throw badRequest("invalid_payload", `html and text may hold at most ${CONTENT_MAX_BYTES} bytes`);
        }
        for (const [field, value] of [["subject", req.subject], ["fromEmail", req.fromEmail], ["fromName", req.fromName]] as const) {
          if (CONTROL.test(value)) throw badRequest("invalid_payload", `${field} must not contain line breaks or control characters`);
        }
        const fromEmail = req.fromEmail.trim() || "sender@mailroom.invalid";
        return {
          check: checkToPb(
            await checks.check({
              subject: req.subject,
              html: req.html,
              text: req.text,
              previewText: req.previewText,
              from: { email: fromEmail, name: req.fromName },
              replyTo: [],
              to: "preview@example.invalid",
              messageId: `<check.${req.workspaceId}@${fromEmail.slice(fromEmail.lastIndexOf("@") + 1)}>`,
              unsubscribeUrl: "",
              unsubscribeRequired: req.unsubscribeRequired,
              textGiven: req.textGiven,
            }),
          ),
        };
      },
    });
}

export function checkToPb(c: CheckResult): MessageInitShape<typeof PreSendCheckSchema> {
  return {
    spam: c.spam.scored ? { scored: true, score: c.spam.score, required: c.spam.required, rules: c.spam.rules } : { scored: false, skipped: c.spam.skipped },
    size: { htmlBytes: BigInt(c.size.htmlBytes), clipped: c.size.clipped },
    links: c.links.map((l) => ({ url: l.url, status: l.status, redirects: l.redirects, finalUrl: l.finalUrl, error: l.error ?? "", refused: l.refused === true })),
    images: c.images.map((i) => ({ src: i.src, alt: i.alt })),
    text: c.text,
    unsubscribe: c.unsubscribe,
    warnings: c.warnings,
    errors: c.errors,
  };
}
