import { createHmac, timingSafeEqual } from 'node:crypto'

/** The header an http wake is signed in. */
export const signatureHeader = 'X-Svc-Signature'

/** `sha256=<hex HMAC-SHA256 of body keyed by secret>`: the value of `X-Svc-Signature`. */
export function wakeSignature(secret: string, body: Buffer | string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`
}

/**
 * For receivers: true when `header` is the signature of the exact `body` bytes under `secret`.
 * Compares in constant time. Verify the raw body before parsing it.
 */
export function verifyWakeSignature(secret: string, body: Buffer | string, header: string | string[] | undefined): boolean {
  if (typeof header !== 'string') return false
  const expected = Buffer.from(wakeSignature(secret, body))
  const given = Buffer.from(header)
  return given.length === expected.length && timingSafeEqual(given, expected)
}
