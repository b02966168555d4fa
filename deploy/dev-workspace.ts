/**
 * The development workspace `npm start` bootstraps when MAILROOM_BOOTSTRAP is not set
 * (written once to <dataDir>/dev-bootstrap.json, loaded idempotently at every start): enough
 * to try every README example as written — senders on example.com and acme.com, templates with
 * merge variables, an OWNER member (console sign-in by magic link; broadcast tests), and a few dozen subscribed contacts with
 * properties and timezones, so a first broadcast reaches someone (captured in /dev/mail).
 * The contacts' addresses are on example.org (reserved, RFC 2606): mail to them goes nowhere
 * even with a relay configured.
 */

export const DEV_WORKSPACE_ID = "ws_dev";
/** The development workspace's owner: signs in to the console by magic link. */
export const DEV_OWNER_EMAIL = "you@example.com";
/** The console's system sender under `npm start` (example.com is verified in the dev workspace). */
export const DEV_SYSTEM_FROM = "Mailroom <signin@example.com>";

/**
 * MAILROOM_SYSTEM_FROM / _WORKSPACE for the development workspace, so magic links and
 * invitations are mailed (captured in /dev/mail) out of the box; nothing when the user set
 * either (the gateway refuses one without the other, naming it).
 */
export function devSystemSender(env: Record<string, string | undefined>): Record<string, string> {
  if (env.MAILROOM_SYSTEM_FROM !== undefined || env.MAILROOM_SYSTEM_WORKSPACE !== undefined) return {};
  return { MAILROOM_SYSTEM_FROM: DEV_SYSTEM_FROM, MAILROOM_SYSTEM_WORKSPACE: DEV_WORKSPACE_ID };
}

const PEOPLE: Array<[first: string, last: string, timezone: string, city: string, country: string]> = [
  ["Ann", "Lee", "America/New_York", "New York", "US"],
  ["Bob", "Martin", "Europe/Paris", "Paris", "FR"],
  ["Chloé", "Dubois", "Europe/Paris", "Lyon", "FR"],
  ["David", "Kim", "Asia/Seoul", "Seoul", "KR"],
  ["Emma", "Schmidt", "Europe/Berlin", "Berlin", "DE"],
  ["Farid", "Haddad", "Asia/Dubai", "Dubai", "AE"],
  ["Grace", "Okafor", "Africa/Lagos", "Lagos", "NG"],
  ["Hiro", "Tanaka", "Asia/Tokyo", "Tokyo", "JP"],
  ["Isabel", "García", "Europe/Madrid", "Madrid", "ES"],
  ["Jack", "Wilson", "Australia/Sydney", "Sydney", "AU"],
  ["Kavya", "Iyer", "Asia/Kolkata", "Bengaluru", "IN"],
  ["Liam", "O'Brien", "Europe/Dublin", "Dublin", "IE"],
  ["Maria", "Silva", "America/Sao_Paulo", "São Paulo", "BR"],
  ["Noah", "Brown", "America/Chicago", "Chicago", "US"],
  ["Olivia", "Taylor", "Europe/London", "London", "GB"],
  ["Pedro", "Alves", "Europe/Lisbon", "Lisbon", "PT"],
  ["Qing", "Zhang", "Asia/Shanghai", "Shanghai", "CN"],
  ["Rosa", "Rossi", "Europe/Rome", "Milan", "IT"],
  ["Sam", "Nguyen", "Asia/Ho_Chi_Minh", "Ho Chi Minh City", "VN"],
  ["Tara", "Singh", "America/Toronto", "Toronto", "CA"],
  ["Uma", "Patel", "America/Los_Angeles", "San Francisco", "US"],
  ["Victor", "Novak", "Europe/Prague", "Prague", "CZ"],
  ["Wendy", "Chen", "Asia/Singapore", "Singapore", "SG"],
  ["Xavier", "Moreau", "Europe/Brussels", "Brussels", "BE"],
  ["Yara", "Costa", "America/Mexico_City", "Mexico City", "MX"],
  ["Zoe", "Jansen", "Europe/Amsterdam", "Amsterdam", "NL"],
  ["Aiden", "Murphy", "America/Denver", "Denver", "US"],
  ["Bianca", "Ionescu", "Europe/Bucharest", "Bucharest", "RO"],
  ["Carlos", "Romero", "America/Argentina/Buenos_Aires", "Buenos Aires", "AR"],
  ["Dana", "Levi", "Asia/Jerusalem", "Tel Aviv", "IL"],
  ["Erik", "Lindqvist", "Europe/Stockholm", "Stockholm", "SE"],
  ["Fatima", "Benali", "Africa/Casablanca", "Casablanca", "MA"],
  ["George", "Papadopoulos", "Europe/Athens", "Athens", "GR"],
  ["Hana", "Suzuki", "Asia/Tokyo", "Osaka", "JP"],
  ["Ivan", "Petrov", "Europe/Sofia", "Sofia", "BG"],
  ["Julia", "Nowak", "Europe/Warsaw", "Warsaw", "PL"],
];
const PLANS = ["free", "pro", "team"];
const COMPANIES = ["Globex", "Initech", "Umbrella", "Hooli", "Stark Industries", "Wayne Enterprises"];
/** A couple of contacts who unsubscribed: the audience of a broadcast leaves them out. */
const UNSUBSCRIBED = new Set(["Liam", "Rosa"]);

const ascii = (s: string) => s.normalize("NFD").replace(/[^A-Za-z]/g, "").toLowerCase();

export function devContacts() {
  return PEOPLE.map(([firstName, lastName, timezone, city, countryCode], i) => ({
    email: `${ascii(firstName)}.${ascii(lastName)}@example.org`,
    firstName,
    lastName,
    timezone,
    status: UNSUBSCRIBED.has(firstName) ? "UNSUBSCRIBED" : "SUBSCRIBED",
    properties: { city, countryCode, plan: PLANS[i % PLANS.length], company: COMPANIES[i % COMPANIES.length], seats: 1 + ((i * 7) % 25) },
  }));
}

/** The MAILROOM_BOOTSTRAP document of the development workspace, with this API key. */
export function devBootstrap(apiKey: string) {
  return {
    workspaces: [{
      id: DEV_WORKSPACE_ID,
      name: "Development",
      timezone: "UTC",
      apiKeys: [{ key: apiKey, scopes: ["api_user"] }],
      verifiedEmails: [],
      // example.com: the banner's first email; acme.com: the README's examples.
      verifiedDomains: ["example.com", "acme.com"],
      // The console's first member, its OWNER: signs in with an emailed (and, in development, printed) link.
      members: [{ email: DEV_OWNER_EMAIL, role: "OWNER" }],
      flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
      monthlyLimit: 100000,
      sendingAccountNew: false,
      contactProperties: [{ slug: "plan", type: "string" }, { slug: "company", type: "string" }, { slug: "seats", type: "number" }],
      contacts: devContacts(),
      templates: [
        {
          name: "welcome",
          displayName: "Welcome",
          subject: "Welcome to Acme, {{firstName}}",
          previewText: "Your account is ready",
          html: "<h1>Welcome, {{firstName}}!</h1><p>Thanks for joining Acme. Your account is ready: <a href=\"https://acme.com/start\">get started</a>.</p><p>The Acme team</p>",
          fromEmail: "hello@acme.com",
          fromName: "Acme",
        },
        {
          name: "receipt",
          displayName: "Receipt",
          subject: "Your receipt for order {{orderId}}",
          html: "<p>Hi {{firstName}},</p><p>We received your payment of {{amount}} for order {{orderId}}. Thank you!</p><p>The Acme team</p>",
          fromEmail: "billing@acme.com",
          fromName: "Acme Billing",
        },
      ],
    }],
  };
}

/**
 * A dev-bootstrap.json written by an earlier version (the workspace without contacts or
 * templates): the same document with this version's sample data, keeping its API key.
 * Anything else (edited by hand) is left as it is: undefined.
 */
export function upgradedDevBootstrap(doc: unknown): ReturnType<typeof devBootstrap> | undefined {
  const workspaces = (doc as { workspaces?: unknown })?.workspaces;
  if (!Array.isArray(workspaces) || workspaces.length !== 1) return undefined;
  const ws = workspaces[0] as { id?: unknown; apiKeys?: Array<{ key?: unknown }>; contacts?: unknown[]; templates?: unknown[] };
  const key = ws.apiKeys?.[0]?.key;
  if (ws.id !== DEV_WORKSPACE_ID || typeof key !== "string" || ws.contacts?.length || ws.templates?.length) return undefined;
  return devBootstrap(key);
}
