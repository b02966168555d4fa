/**
 * The public URL shapes of tracking and unsubscribe links, in the gateway's route
 * syntax. This is the one table: the merge engine builds every link from it and the
 * gateway registers its routes from it, so the two cannot drift apart.
 *
 * `:token` is the signed recipient token (tokens.ts), `:link` the signed link token.
 * `:token` comes last in every shape: the merge engine folds everything before it into
 * a prefix computed once per message and appends each recipient's token.
 */
export const LINK_ROUTES = {
  /** Open pixel: GET answers a 1×1 GIF. */
  open: "/t/o/:token",
  /** Click redirect: GET answers 302 to the URL signed in the link token. */
  click: "/t/c/:link/:token",
  /**
   * Unsubscribe: GET shows a confirmation page, POST unsubscribes at once (RFC 8058
   * one-click, also the List-Unsubscribe URL). With MANAGE_QUERY it is the
   * manage-preferences page.
   */
  unsubscribe: "/u/:token",
} as const;

export type LinkRoute = keyof typeof LINK_ROUTES;

/** Query parameter that turns the unsubscribe URL into the manage-preferences URL. */
export const MANAGE_PARAM = "manage";
const MANAGE_QUERY = `?${MANAGE_PARAM}=1`;

/** Parameter names of a route shape: "/t/c/:link/:token" → "link" | "token". */
type ParamsOf<S extends string> = S extends `${string}:${infer P}/${infer Rest}`
  ? P | ParamsOf<`/${Rest}`>
  : S extends `${string}:${infer P}`
    ? P
    : never;

export type LinkParams<R extends LinkRoute> = Record<ParamsOf<(typeof LINK_ROUTES)[R]>, string>;

/** The path of a route with its parameters filled in (tokens are URL-safe as signed). */
export function linkPath<R extends LinkRoute>(route: R, params: LinkParams<R>): string {
  const values = params as Record<string, string>;
  return LINK_ROUTES[route].replace(/:(\w+)/g, (_, name: string) => values[name]);
}

/** publicUrl without trailing slashes, the base every link starts with. */
export function linkBase(publicUrl: string): string {
  return publicUrl.replace(/\/+$/, "");
}

/** The part of a route's URL before the recipient token, for merges that append it. */
export function linkPrefix<R extends LinkRoute>(base: string, route: R, params: Omit<LinkParams<R>, "token">): string {
  return base + linkPath(route, { ...params, token: "" } as LinkParams<R>);
}

export function unsubscribeUrl(base: string, recipientToken: string): string {
  return base + linkPath("unsubscribe", { token: recipientToken });
}

export function manageUrl(unsubscribe: string): string {
  return unsubscribe + MANAGE_QUERY;
}

/** Static path prefixes of the shapes ("/t/o/", "/t/c/", "/u/"): where our own pages live. */
const OWN_PATH_PREFIXES = Object.values(LINK_ROUTES).map((shape) => shape.slice(0, shape.indexOf(":")));

/**
 * Whether a URL already points at one of our tracking or unsubscribe pages under
 * publicUrl (case-insensitive), so the compiler does not wrap it again.
 */
export function isOwnLinkUrl(url: string, publicUrl: string): boolean {
  const base = linkBase(publicUrl).toLowerCase();
  const lower = url.toLowerCase();
  return OWN_PATH_PREFIXES.some((prefix) => lower.startsWith(base + prefix));
}
