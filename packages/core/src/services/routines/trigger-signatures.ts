import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { SlawError } from '../../errors.js'
import type { RoutineTrigger, SigningMode } from '../../contracts/routines.js'
import { hashToken } from '../foundation/ids.js'
import type { MasterKey } from '../secrets/master-key.js'

/**
 * Signing of public trigger calls (docs/routines.md states the same computations):
 * - `bearer`: `Authorization: Bearer <secret>`; the secret is stored as its SHA-256 only.
 * - `hmac_sha256`: `X-Slaw-Timestamp: <unix seconds>` and
 *   `X-Slaw-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>`; the timestamp
 *   must lie within replayWindowSec of the server's clock.
 * - `vcs_hmac`: GitHub's `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, <raw body>)>`.
 * - `none`: nothing is checked; the unguessable publicId is the only protection.
 * HMAC secrets are kept as MasterKey envelopes because every check needs the secret itself.
 */
const timestampHeader = 'x-slaw-timestamp'
const signatureHeader = 'x-slaw-signature'
const vcsSignatureHeader = 'x-hub-signature-256'

export const newTriggerSecret = (): string => `slaw_wh_${randomBytes(32).toString('base64url')}`
/** 192 random bits: the public URL names the trigger without making it guessable. */
export const newPublicId = (): string => `rtp_${randomBytes(24).toString('base64url')}`

/** Binds a trigger's encrypted secret to that trigger: an envelope copied to another row does not decrypt. */
const triggerSecretAad = (triggerId: string): string => `routine_trigger:${triggerId}`

export function storedSecret(mode: SigningMode, triggerId: string, secret: string, masterKey: MasterKey): { secretHash: string | null; secretCiphertext: string | null } {
  if (mode === 'bearer') return { secretHash: hashToken(secret), secretCiphertext: null }
  if (mode === 'hmac_sha256' || mode === 'vcs_hmac') return { secretHash: null, secretCiphertext: masterKey.encrypt(secret, triggerSecretAad(triggerId)) }
  return { secretHash: null, secretCiphertext: null }
}

function hmacHex(secret: string, data: Buffer | string): string {
  return createHmac('sha256', secret).update(data).digest('hex')
}

/** Constant-time comparison of two strings (different lengths compare unequal without a timing hint about content). */
function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  if (x.length !== y.length) {
    timingSafeEqual(x, x)
    return false
  }
  return timingSafeEqual(x, y)
}

export interface SignedRequest {
  headers: Record<string, string | string[] | undefined>
  rawBody: Buffer
}

const header = (req: SignedRequest, name: string): string | undefined => {
  const v = req.headers[name]
  return Array.isArray(v) ? v[0] : v
}

/**
 * Checks a public fire against the trigger's signing mode (an `api` trigger is always `bearer`).
 * Returns a key derived from the signature of this exact signed request (for replay deduplication:
 * HMAC modes), or null for modes that sign nothing about the request (bearer, none).
 * Throws 401 unauthorized with a message naming what failed, never the expected value.
 */
export function verifySignature(trigger: RoutineTrigger, req: SignedRequest, now: Date, masterKey: MasterKey): string | null {
  const mode: SigningMode = trigger.kind === 'api' ? 'bearer' : (trigger.signingMode ?? 'bearer')
  const refuse = (message: string) => new SlawError('unauthorized', message)
  switch (mode) {
    case 'none':
      return null
    case 'bearer': {
      const match = /^Bearer +(\S+)$/i.exec(header(req, 'authorization') ?? '')
      if (!match || !trigger.secretHash || !safeEqual(hashToken(match[1]!), trigger.secretHash)) throw refuse('Send the trigger secret as Authorization: Bearer <secret>.')
      return null
    }
    case 'hmac_sha256': {
      const ts = header(req, timestampHeader) ?? ''
      const sig = header(req, signatureHeader) ?? ''
      if (!/^\d{1,12}$/.test(ts)) throw refuse(`Send ${timestampHeader} (unix seconds) and ${signatureHeader}.`)
      const skew = Math.abs(now.getTime() / 1000 - Number(ts))
      if (skew > (trigger.replayWindowSec ?? 300)) throw refuse('The timestamp is outside the replay window.')
      const secret = decryptSecret(trigger, masterKey)
      const expected = `sha256=${hmacHex(secret, Buffer.concat([Buffer.from(`${ts}.`), req.rawBody]))}`
      if (!safeEqual(sig.toLowerCase(), expected)) throw refuse('The signature does not match.')
      return `hmac:${expected.slice(7)}`
    }
    case 'vcs_hmac': {
      const sig = header(req, vcsSignatureHeader) ?? ''
      const secret = decryptSecret(trigger, masterKey)
      const expected = `sha256=${hmacHex(secret, req.rawBody)}`
      if (!safeEqual(sig.toLowerCase(), expected)) throw refuse(`The ${vcsSignatureHeader} signature does not match.`)
      // No timestamp is signed: the body's signature itself is what a replay repeats.
      return `vcs:${expected.slice(7)}`
    }
  }
}

function decryptSecret(trigger: RoutineTrigger, masterKey: MasterKey): string {
  if (!trigger.secretCiphertext) throw new SlawError('unauthorized', 'The trigger has no signing secret.')
  return masterKey.decrypt(trigger.secretCiphertext, triggerSecretAad(trigger.id))
}
