import { z } from "zod";
import { RELAY_PROVIDERS } from "@mailroom/pipeline/relay-providers.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { apiErrorSchema, bodyTooLargeFor, handleError, isBodyTooLarge, sendError } from "@mailroom/http/errors.js";
import { defineRoute, type RouteModule } from "./route.js";

/** A provider's batch (SendGrid posts up to a few hundred events at once) fits many times over. */
export const PROVIDER_WEBHOOK_BODY_LIMIT_BYTES = 1024 * 1024;

const PROVIDER_NAMES: Record<(typeof RELAY_PROVIDERS)[number], string> = {
  ses: "Amazon SES (SNS HTTPS subscription: notifications and the subscription confirmation, signature verified)",
  postmark: "Postmark (bounce, spam complaint and delivery webhooks; HTTP basic auth in the webhook URL)",
  sendgrid: "SendGrid (signed event webhook)",
  mailgun: "Mailgun (webhooks signed with the HTTP webhook signing key)",
};

const received = z
  .strictObject({
    accepted: z.number().int().meta({ description: "Notifications that became events (bounced, complained, delivered)." }),
    ignored: z.number().int().meta({ description: "Notifications understood but naming no message this server remembers, or of a kind it does not record." }),
    subscriptionConfirmed: z.boolean().meta({ description: "SES: the SNS subscription confirmation was followed." }),
  })
  .meta({ id: "ProviderWebhookReceived" });

/**
 * POST /webhooks/{ses,postmark,sendgrid,mailgun}: relay providers' event webhooks (DESIGN
 * §9.7), public (no API key: each provider's signature or credentials authenticate it, which
 * the inbound unit checks). The body goes on as the bytes received, whatever its type, since
 * signatures cover those bytes; the headers go with it.
 */
export const registerProviderWebhooks: RouteModule = (app, deps) => {
  app.register(async (scope) => {
    // Raw bytes for every content type (SNS posts text/plain, the others JSON).
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));
    // The 413 names this endpoint's limit, not the email sizes of the default message.
    scope.setErrorHandler((err, request, reply) =>
      isBodyTooLarge(err) ? sendError(reply, bodyTooLargeFor("a provider webhook", PROVIDER_WEBHOOK_BODY_LIMIT_BYTES)) : handleError(err, request, reply),
    );
    for (const provider of RELAY_PROVIDERS) {
      defineRoute(scope, {
        method: "POST",
        url: `/webhooks/${provider}`,
        operationId: `${provider}ProviderWebhook`,
        tags: ["Provider webhooks"],
        summary: `Event webhook of ${PROVIDER_NAMES[provider].split(" (")[0]}`,
        description: `${PROVIDER_NAMES[provider]}. Bounces, complaints and deliveries of messages sent through this provider become the email's or broadcast recipient's events, suppressions and webhooks, as bounce mail would. Answers 404 until the provider is configured on the server.`,
        bodyLimit: PROVIDER_WEBHOOK_BODY_LIMIT_BYTES,
        // A fresh report whose message inbound has not recorded yet: the provider retries.
        errorCodes: { unknown_delivery: "service_unavailable" },
        requestContent: {
          required: true,
          content: { "application/json": z.unknown(), ...(provider === "ses" ? { "text/plain": z.string() } : {}) },
        },
        responses: {
          200: { description: "Taken (including notifications that name no message this server sent).", body: received },
          400: { description: "`invalid_provider_webhook`: not what the provider sends.", body: apiErrorSchema },
          401: { description: "`provider_webhook_unauthenticated`: the signature, credentials or SNS topic are not the configured ones.", body: apiErrorSchema },
          404: { description: "`provider_webhook_not_configured`: the server takes no webhooks from this provider.", body: apiErrorSchema },
          413: "PayloadTooLarge",
          // Also a fresh report about a message sent moments ago that the inbound unit has not recorded yet.
          503: "ServiceUnavailable",
        },
        handler: async (request) => {
          const body = Buffer.isBuffer(request.body) ? new Uint8Array(request.body) : new Uint8Array(0);
          const headers = Object.entries(request.headers).flatMap(([name, value]) =>
            value === undefined ? [] : [{ name: name.toLowerCase(), value: Array.isArray(value) ? value.join(", ") : value }],
          );
          const res = await deps.clients.inbound.receiveProviderWebhook({ provider, body, headers, path: request.url }, rpcOptions(request));
          return { accepted: res.accepted, ignored: res.ignored, subscriptionConfirmed: res.subscriptionConfirmed };
        },
      });
    }
  });
};
