import type { EmailInput } from "@mailroom/proto/email/v1/email_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { BATCH_BODY_LIMIT_BYTES, apiErrorSchema, bodyFromErrorInfo, forWorkspace, monthlyLimitErrorSchema, publicErrorBody, refusal } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { MAX_BATCH, batchItemJson, parseEmail, sendBatchRequestSchema, sendBatchResponseSchema } from "../schemas/email.js";
import { defineRoute, type RouteModule } from "./route.js";

const batchInvalid = (message: string) => refusal({ code: "batch_invalid", message });

/** The batch envelope, or a refusal of the whole request: its items are checked one by one later. */
function parseBatchEnvelope(raw: unknown): { emails: unknown[] } {
  const body = raw as { emails?: unknown } | null;
  const emails = body && typeof body === "object" && !Array.isArray(body) ? body.emails : undefined;
  if (!Array.isArray(emails)) throw batchInvalid("The payload must be { emails: [ up to 50 raw or templated emails ] }");
  if (emails.length === 0) throw batchInvalid("emails must contain at least one email");
  if (emails.length > MAX_BATCH) throw batchInvalid(`A batch holds at most ${MAX_BATCH} emails; got ${emails.length}`);
  const extra = Object.keys(body as object).filter((k) => k !== "emails");
  if (extra.length) throw batchInvalid(`Unknown field${extra.length > 1 ? "s" : ""} ${extra.join(", ")}; the payload is { emails: [...] }`);
  return { emails };
}

/**
 * POST /v1/emails/batch: 1–50 raw or templated emails, mixed. Valid items are sent; each
 * invalid one comes back in `failed` with its index and the body it would get alone.
 * A malformed envelope (not an array, empty, over 50) refuses the whole request, as does
 * a refusal of the whole batch by the email service (monthly limit, unavailable service).
 */
export const registerSendBatch: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "POST",
    url: "/v1/emails/batch",
    operationId: "sendBatch",
    tags: ["Emails"],
    summary: `Send up to ${MAX_BATCH} emails (raw and templated may be mixed)`,
    body: sendBatchRequestSchema,
    parseBody: parseBatchEnvelope,
    bodyLimit: BATCH_BODY_LIMIT_BYTES,
    responses: {
      200: { description: "Each item sent or refused on its own (an item's refusal, e.g. `header_not_allowed`, `attachments_too_large`, `too_many_recipients`, `invalid_tags` or an attachment that is not base64, is in `failed` with the body it would get alone).", body: sendBatchResponseSchema },
      400: {
        description: `\`batch_invalid\` (not \`{ emails: [...] }\`, empty, over ${MAX_BATCH}, unknown top-level field) or \`invalid_json\`; nothing sent.`,
        body: apiErrorSchema,
      },
      403: { description: "The batch would exceed the monthly sending limit; nothing sent.", body: monthlyLimitErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { body: { emails } }) => {
      // Per-item failures are part of the answer, not errors: they are collected, not thrown.
      const failed: Array<Record<string, unknown> & { index: number }> = [];
      const inputs: EmailInput[] = [];
      const positions: number[] = [];
      emails.forEach((item, index) => {
        const parsed = parseEmail(item);
        if (parsed.ok) {
          inputs.push(parsed.input);
          positions.push(index);
        } else {
          failed.push({ index, to: recipientOf(item), ...publicErrorBody(parsed.error, app.errorDocsBase) });
        }
      });

      let successful: Record<string, unknown>[] = [];
      if (inputs.length) {
        const res = await deps.clients.email.sendBatch({ workspaceId: workspaceOf(request), emails: inputs }, rpcOptions(request));
        successful = res.successful.map(batchItemJson);
        for (const f of res.failed) {
          const index = positions[f.index] ?? f.index;
          const body = f.error ? bodyFromErrorInfo(f.error, app.errorDocsBase) : publicErrorBody({ code: "internal", message: "Internal error" }, app.errorDocsBase);
          failed.push({ index, to: recipientOf(emails[index]), ...forWorkspace(body, workspaceOf(request)) });
        }
      }
      failed.sort((a, b) => a.index - b.index);
      return reply.code(200).send({ emails: { successful, failed } });
    },
  });

function recipientOf(item: unknown): string | null {
  const to = item && typeof item === "object" ? (item as { to?: unknown }).to : undefined;
  return typeof to === "string" ? to : null;
}
