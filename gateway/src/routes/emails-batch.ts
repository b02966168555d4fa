import type { FastifyInstance } from "fastify";
import type { EmailInput } from "../../../gen/mailroom/email/v1/email_pb.js";
import type { GatewayDeps } from "../deps.js";
import { rpcOptions } from "../deps.js";
import { workspaceOf } from "../auth.js";
import { bodyFromErrorInfo, publicErrorBody, replyWithError, sendError } from "../errors.js";
import { batchItemJson, parseEmail } from "../schemas/email.js";

export const MAX_BATCH = 50;

const batchInvalid = (message: string) => publicErrorBody({ code: "batch_invalid", message });

/**
 * POST /v1/emails/batch: 1–50 raw or templated emails, mixed. Valid items are sent; each
 * invalid one comes back in `failed` with its index and the body it would get alone.
 * A malformed envelope (not an array, empty, over 50) refuses the whole request.
 */
export function registerSendBatch(app: FastifyInstance, deps: GatewayDeps): void {
  app.post("/v1/emails/batch", async (request, reply) => {
    const body = request.body as { emails?: unknown } | null;
    const emails = body && typeof body === "object" && !Array.isArray(body) ? body.emails : undefined;
    if (!Array.isArray(emails)) return sendError(reply, batchInvalid("The payload must be { emails: [ up to 50 raw or templated emails ] }"));
    if (emails.length === 0) return sendError(reply, batchInvalid("emails must contain at least one email"));
    if (emails.length > MAX_BATCH) return sendError(reply, batchInvalid(`A batch holds at most ${MAX_BATCH} emails; got ${emails.length}`));
    const extra = Object.keys(body as object).filter((k) => k !== "emails");
    if (extra.length) return sendError(reply, batchInvalid(`Unknown field${extra.length > 1 ? "s" : ""} ${extra.join(", ")}; the payload is { emails: [...] }`));

    const failed: Array<Record<string, unknown> & { index: number }> = [];
    const inputs: EmailInput[] = [];
    const positions: number[] = [];
    emails.forEach((item, index) => {
      const parsed = parseEmail(item);
      if (parsed.ok) {
        inputs.push(parsed.input);
        positions.push(index);
      } else {
        failed.push({ index, to: recipientOf(item), ...publicErrorBody(parsed.error) });
      }
    });

    let successful: Record<string, unknown>[] = [];
    if (inputs.length) {
      try {
        const res = await deps.clients.email.sendBatch({ workspaceId: workspaceOf(request), emails: inputs }, rpcOptions(request));
        successful = res.successful.map(batchItemJson);
        for (const f of res.failed) {
          const index = positions[f.index] ?? f.index;
          failed.push({ index, to: recipientOf(emails[index]), ...(f.error ? bodyFromErrorInfo(f.error) : publicErrorBody({ code: "internal", message: "Internal error" })) });
        }
      } catch (err) {
        // A refusal of the whole request (monthly limit, unavailable service).
        return replyWithError(reply, err);
      }
    }
    failed.sort((a, b) => a.index - b.index);
    return reply.code(200).send({ emails: { successful, failed } });
  });
}

function recipientOf(item: unknown): string | null {
  const to = item && typeof item === "object" ? (item as { to?: unknown }).to : undefined;
  return typeof to === "string" ? to : null;
}
