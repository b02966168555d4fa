/**
 * The pre-send check's public JSON (DESIGN §10.5): what POST /v1/broadcasts/:id/check and
 * POST /v1/templates/:name/check answer, and what the console shows.
 */
import { z } from "zod";
import type { PreSendCheck } from "@mailroom/proto/broadcast/v1/check_pb.js";

const findingSchema = z
  .strictObject({
    level: z.enum(["warning", "error"]),
    code: z.string().meta({ description: "`link_broken`, `link_unreachable`, `link_refused`, `image_missing_alt`, `image_heavy`, `html_clipped`, `text_missing`, `unsubscribe_missing`, `subject_missing`, `subject_long`, `preview_text_long`, `spam_score_high`, `spam_score`, `spam_check_failed`, `links_not_checked`." }),
    message: z.string(),
    where: z.string().meta({ description: "The link's URL, the image's src, or `html`, `text`, `subject`, `preview_text`, `spam`." }),
  })
  .meta({ id: "CheckFinding" });

export const preSendCheckSchema = z
  .strictObject({
    spam: z
      .union([
        z.strictObject({
          score: z.number(),
          required: z.number().meta({ description: "The score from which SpamAssassin calls a message spam (5.0 by default)." }),
          rules: z.array(z.strictObject({ name: z.string(), score: z.number(), description: z.string() })),
        }),
        z.strictObject({ skipped: z.string().meta({ description: "Why there is no score and how to get one (`spamassassin` on the PATH or `MAILROOM_SPAMD_URL`)." }) }),
      ])
      .meta({ description: "SpamAssassin's score of the message as delivery builds it, with the rules that fired; or why it was skipped." }),
    size: z.strictObject({
      htmlBytes: z.number().int(),
      clipped: z.boolean().meta({ description: "Over 102 KB: Gmail clips it." }),
    }),
    links: z.array(
      z.strictObject({
        url: z.string(),
        status: z.number().int().meta({ description: "The last answer's HTTP status; 0 when none came." }),
        redirects: z.array(z.strictObject({ status: z.number().int(), location: z.string() })),
        finalUrl: z.string(),
        error: z.string().optional(),
        refused: z.boolean().optional().meta({ description: "Not fetched: its address is private, loopback or otherwise not public (the webhooks' SSRF guard)." }),
      }),
    ),
    images: z.array(z.strictObject({ src: z.string(), alt: z.string().nullable().meta({ description: "null: the image has no alt attribute." }) })),
    text: z.strictObject({
      present: z.boolean().meta({ description: "The message has a plain-text part with text in it." }),
      generated: z.boolean().meta({ description: "That part is generated from the HTML (none was written)." }),
      chars: z.number().int(),
    }),
    unsubscribe: z.strictObject({
      required: z.boolean().meta({ description: "Bulk mail (broadcasts): an unsubscribe link is required." }),
      found: z.boolean(),
    }),
    warnings: z.array(findingSchema),
    errors: z.array(findingSchema),
  })
  .meta({ id: "PreSendCheck", description: "The message as its first recipient would get it, checked. Nothing is sent or stored." });

/** The check as public JSON. */
export function checkJson(c: PreSendCheck): z.output<typeof preSendCheckSchema> {
  const finding = (f: { level: string; code: string; message: string; where: string }) => ({ level: f.level === "error" ? ("error" as const) : ("warning" as const), code: f.code, message: f.message, where: f.where });
  return {
    spam: c.spam?.scored ? { score: c.spam.score, required: c.spam.required, rules: c.spam.rules.map((r) => ({ name: r.name, score: r.score, description: r.description })) } : { skipped: c.spam?.skipped ?? "" },
    size: { htmlBytes: Number(c.size?.htmlBytes ?? 0), clipped: c.size?.clipped ?? false },
    links: c.links.map((l) => ({
      url: l.url,
      status: l.status,
      redirects: l.redirects.map((r) => ({ status: r.status, location: r.location })),
      finalUrl: l.finalUrl,
      ...(l.error ? { error: l.error } : {}),
      ...(l.refused ? { refused: true } : {}),
    })),
    images: c.images.map((i) => ({ src: i.src, alt: i.alt ?? null })),
    text: { present: c.text?.present ?? false, generated: c.text?.generated ?? false, chars: c.text?.chars ?? 0 },
    unsubscribe: { required: c.unsubscribe?.required ?? false, found: c.unsubscribe?.found ?? false },
    warnings: c.warnings.map(finding),
    errors: c.errors.map(finding),
  };
}

