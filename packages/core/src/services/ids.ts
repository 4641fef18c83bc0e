import { randomBytes, createHash } from 'node:crypto'

/**
 * UUIDv7: time-ordered, so new rows land at the right edge of their indexes instead of all over
 * them. Node 20 has no built-in v7; this is the RFC 9562 layout (48-bit ms time, version, random).
 */
export function uuidv7(now = Date.now()): string {
  const b = randomBytes(16)
  b.writeUIntBE(now, 0, 6)
  b[6] = 0x70 | (b[6]! & 0x0f)
  b[8] = 0x80 | (b[8]! & 0x3f)
  const h = b.toString('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
export function isUuid(value: unknown): boolean {
  return typeof value === 'string' && uuidPattern.test(value)
}

/** A bearer token: a readable prefix and 256 random bits. */
export function newToken(prefix: 'slaw_op' | 'slaw_ak' | string): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`
}

/**
 * Tokens are 256-bit random strings, so a fast hash is enough (no dictionary to defend against);
 * it keeps the per-request key lookup cheap.
 */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}
