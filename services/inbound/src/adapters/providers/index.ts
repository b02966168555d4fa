import { isRelayProvider } from "@mailroom/pipeline/relay-providers.js";
import type { ProviderReport } from "../../domain/model.js";
import type { Logger } from "../../domain/ports.js";
import type { ProviderSettings } from "../../settings.js";
import { checkMailgunSignature, mailgunReports, parseMailgun } from "./mailgun.js";
import { checkPostmarkAuth, postmarkReports } from "./postmark.js";
import { malformed, notAuthenticated, notConfigured } from "./refusals.js";
import { checkSendgridSignature, sendgridReports } from "./sendgrid.js";
import { sesReports } from "./ses.js";
import { parseEnvelope, snsUrl, verifyEnvelope, type SigningCertificates, type SnsEnvelope, type SubscriptionConfirmer } from "./sns.js";

/** One provider webhook request as the gateway received it. */
export interface ProviderRequest {
  provider: string;
  body: Uint8Array;
  /** Lower-case names. */
  headers: Map<string, string>;
}

/** What a request amounted to: reports for the domain, or an SNS subscription confirmed. */
export interface ProviderWebhook {
  reports: ProviderReport[];
  subscriptionConfirmed: boolean;
}

export interface ProviderWebhookDeps {
  settings: ProviderSettings;
  certificates: SigningCertificates;
  confirmer: SubscriptionConfirmer;
  now: () => Date;
  /** Where an SES refusal's reason goes (the 401 itself says the same for every reason). */
  logger?: Logger;
}

const VARIABLE: Record<string, string> = {
  ses: "MAILROOM_SES_TOPIC_ARNS",
  postmark: "MAILROOM_POSTMARK_WEBHOOK_AUTH",
  sendgrid: "MAILROOM_SENDGRID_WEBHOOK_PUBLIC_KEY",
  mailgun: "MAILROOM_MAILGUN_WEBHOOK_SIGNING_KEY",
};

/**
 * The provider webhook transport's reading half: authenticates a request the way its
 * provider signs it, then turns its payload into reports. Refusals are AppErrors: 404 for
 * a provider not configured, 401 for a bad signature or credentials, 400 for a malformed body.
 */
export class ProviderWebhooks {
  constructor(private readonly deps: ProviderWebhookDeps) {}

  async read(req: ProviderRequest): Promise<ProviderWebhook> {
    const { settings } = this.deps;
    const none = (reports: ProviderReport[]) => ({ reports, subscriptionConfirmed: false });
    if (!isRelayProvider(req.provider)) throw notConfigured(req.provider || "(no provider)", "not a relay provider Mailroom knows");
    switch (req.provider) {
      case "ses": {
        if (!settings.ses) throw notConfigured("ses", VARIABLE.ses);
        const envelope = parseEnvelope(req.body);
        await this.verifySns(envelope, settings.ses.topicArns);
        if (envelope.Type === "SubscriptionConfirmation") {
          const url = snsUrl(envelope.SubscribeURL);
          if (!url) throw malformed("ses", "SubscribeURL is not an https URL on sns.<region>.amazonaws.com");
          await this.deps.confirmer.confirm(url);
          return { reports: [], subscriptionConfirmed: true };
        }
        if (envelope.Type !== "Notification") return none([]);
        return none(sesReports(envelope.Message));
      }
      case "postmark":
        if (!settings.postmark) throw notConfigured("postmark", VARIABLE.postmark);
        checkPostmarkAuth(req.headers.get("authorization"), settings.postmark);
        return none(postmarkReports(req.body));
      case "sendgrid":
        if (!settings.sendgrid) throw notConfigured("sendgrid", VARIABLE.sendgrid);
        checkSendgridSignature(req.headers, req.body, settings.sendgrid.publicKey);
        return none(sendgridReports(req.body));
      case "mailgun": {
        if (!settings.mailgun) throw notConfigured("mailgun", VARIABLE.mailgun);
        const webhook = parseMailgun(req.body);
        checkMailgunSignature(webhook, settings.mailgun.signingKey, this.deps.now());
        return none(mailgunReports(webhook));
      }
    }
  }

  /** One answer for every refusal (topic, certificate URL, certificate, signature): a prober learns nothing; the log says which. */
  private async verifySns(envelope: SnsEnvelope, topicArns: string[]): Promise<void> {
    try {
      await verifyEnvelope(envelope, topicArns, this.deps.certificates);
    } catch (err) {
      if ((err as { code?: string }).code !== "provider_webhook_unauthenticated") throw err;
      this.deps.logger?.warn({ provider: "ses", topicArn: envelope.TopicArn, signingCertUrl: envelope.SigningCertURL, reason: (err as Error).message }, "SNS message refused");
      throw notAuthenticated("ses", "the SNS message is not signed by Amazon SNS for a topic in MAILROOM_SES_TOPIC_ARNS");
    }
  }
}
