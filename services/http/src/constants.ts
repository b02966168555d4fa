/** Values the public routes and the console share. */

/** Email ids are trs_ + a lowercase ULID; anything else cannot exist. */
export const EMAIL_ID = /^trs_[0-9a-z]{26}$/;

/** The DMARC report window when `since` is not given (as the inbound unit's default). */
export const DMARC_DEFAULT_DAYS = 30;

/** A signup form's honeypot: hidden from people, filled by bots that fill every field. */
export const HONEYPOT_FIELD = "_hp";
