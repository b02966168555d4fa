/**
 * ISO 8601 date-times that name their zone (DESIGN §6, `sendAt`): the extended form
 * (`2026-12-01T09:00:00.5+01:00`) or the basic form (`20261201T090000Z`), with minutes
 * or seconds, fractional seconds (`.` or `,`), and a zone `Z`, `±HH`, `±HHMM` or
 * `±HH:MM`. Date and time use the same form; the zone may be written either way. A time
 * without a zone is refused: it would mean a different instant on every server.
 */

const EXTENDED = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(.*)$/;
const BASIC = /^(\d{4})(\d{2})(\d{2})[Tt](\d{2})(\d{2})(?:(\d{2})(?:[.,](\d{1,9}))?)?(.*)$/;
const ZONE = /^(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)$/;

/** The instant a date-time with a zone names, or undefined when it is not one. */
export function parseSendAt(input: string): Date | undefined {
  const value = input.trim();
  const m = EXTENDED.exec(value) ?? BASIC.exec(value);
  if (!m) return undefined;
  const [, year, month, day, hour, minute, second = "0", fraction = "", zoneText] = m;
  const zone = ZONE.exec(zoneText);
  if (!zone) return undefined;
  const [y, mo, d, h, mi, s] = [year, month, day, hour, minute, second].map(Number);
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return undefined;
  const offsetHours = zone[1] ? 0 : Number(zone[3]);
  const offsetMinutes = zone[1] ? 0 : Number(zone[4] ?? "0");
  if (offsetHours > 23 || offsetMinutes > 59) return undefined;
  const millis = fraction ? Math.floor(Number(`0.${fraction}`) * 1000) : 0;
  const local = Date.UTC(y, mo - 1, d, h, mi, s, millis);
  // Date.UTC rolls 2026-02-30 over into March: the day must survive unchanged.
  if (new Date(Date.UTC(y, mo - 1, d)).getUTCDate() !== d) return undefined;
  const sign = zone[2] === "-" ? -1 : 1;
  return new Date(local - sign * (offsetHours * 60 + offsetMinutes) * 60_000);
}
