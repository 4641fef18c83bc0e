import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { hashToken, isUuid as isCoreUuid } from '@slaw/core'

/** A per-instance API key: a readable prefix and 256 random bits. Only its hash is ever stored. */
export function newApiKey(): string {
  return `slaw_ik_${randomBytes(32).toString('base64url')}`
}

/** Keys are hashed as core hashes its tokens (256-bit random strings: a fast hash suffices). */
export const hashKey = hashToken

/** Compares two secrets in constant time (over their digests, so lengths leak nothing either). */
export function secretsEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest()
  const b = createHash('sha256').update(expected).digest()
  return timingSafeEqual(a, b)
}

/** The token of an `Authorization: Bearer <token>` header, or null. */
export function bearerToken(header: string | string[] | undefined): string | null {
  const value = Array.isArray(header) ? header[0] : header
  if (!value) return null
  const match = /^Bearer\s+(\S{1,512})\s*$/i.exec(value)
  return match ? match[1]! : null
}

/** Ids from paths and bodies are checked before they reach SQL (core's check): a malformed one is simply unknown. */
export function isUuid(value: unknown): value is string {
  return isCoreUuid(value)
}
