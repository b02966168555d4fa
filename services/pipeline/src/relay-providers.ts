/**
 * Relay providers whose event webhooks Mailroom reads (DESIGN §9.7), and the headers a
 * delivery through one of them carries so its reports name the delivery: delivery writes
 * them (only on that provider's routes), inbound reads them back from the webhook payloads.
 * Every report can also be matched by the Message-ID header, which each provider returns.
 */
export const RELAY_PROVIDERS = ["ses", "postmark", "sendgrid", "mailgun"] as const;
export type RelayProvider = (typeof RELAY_PROVIDERS)[number];

export function isRelayProvider(name: string): name is RelayProvider {
  return (RELAY_PROVIDERS as readonly string[]).includes(name);
}

/** The key under which each provider hands our delivery id back (metadata, custom args, variables, tags). */
export const DELIVERY_ID_KEY = "mailroom_delivery_id";

/** Headers that make `provider` return the delivery id in its events; none for an unknown provider. */
export function correlationHeaders(provider: string, deliveryId: string): Array<{ key: string; value: string }> {
  switch (provider) {
    case "ses":
      // Message tags come back in event-publishing notifications as mail.tags.
      return [{ key: "X-SES-MESSAGE-TAGS", value: `${DELIVERY_ID_KEY}=${sesTagValue(deliveryId)}` }];
    case "postmark":
      // X-PM-Metadata-<key> becomes the webhook's Metadata.<key>.
      return [{ key: `X-PM-Metadata-${DELIVERY_ID_KEY}`, value: deliveryId }];
    case "sendgrid":
      // unique_args come back as top-level fields of each event.
      return [{ key: "X-SMTPAPI", value: JSON.stringify({ unique_args: { [DELIVERY_ID_KEY]: deliveryId } }) }];
    case "mailgun":
      // X-Mailgun-Variables come back as event-data.user-variables.
      return [{ key: "X-Mailgun-Variables", value: JSON.stringify({ [DELIVERY_ID_KEY]: deliveryId }) }];
    default:
      return [];
  }
}

/**
 * A delivery id as an SES message tag value, which may hold only ASCII letters, digits, '_'
 * and '-' (a broadcast recipient's id is <broadcastId>.<contactId>; a test send's has a '-').
 * Every other byte of its UTF-8, '-' included, is written -XX (upper-case hex): '.' → -2E.
 */
export function sesTagValue(deliveryId: string): string {
  let out = "";
  for (const byte of Buffer.from(deliveryId, "utf8")) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9_]/.test(c) ? c : `-${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** The delivery id an SES tag value encodes (`sesTagValue` reversed); a value that decodes to no UTF-8 text is returned as is. */
export function deliveryIdOfSesTag(value: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < value.length; i++) {
    const hex = value[i] === "-" ? /^[0-9A-F]{2}$/.exec(value.slice(i + 1, i + 3))?.[0] : undefined;
    if (hex) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else bytes.push(...Buffer.from(value[i]!, "utf8"));
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(bytes));
  } catch {
    return value;
  }
}
