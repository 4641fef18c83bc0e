import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto'
import { SlawError } from '../../errors.js'

/**
 * The instance's master key (SVC_MASTER_KEY): 32 bytes that encrypt local secrets and HMAC trigger
 * secrets and derive the run-token signing key. Every node of one instance must hold the same key;
 * `keyId` (a hash of the key, never the key) is what storage records to tell keys apart.
 *
 * Ciphertexts are self-describing envelopes `v1.<keyId>.<nonce>.<ciphertext+tag>` (base64url), so a
 * value encrypted under an older key names that key and the rotation command can find it.
 */
export class MasterKey {
  readonly keyId: string
  readonly #key: Buffer

  private constructor(key: Buffer) {
    if (key.length !== 32) throw new TypeError(`master key must be 32 bytes, got ${key.length}`)
    this.#key = key
    this.keyId = createHash('sha256').update('slaw-master-key-id:').update(key).digest('hex').slice(0, 16)
  }

  /** From 32 raw bytes. */
  static fromBytes(key: Uint8Array): MasterKey {
    return new MasterKey(Buffer.from(key))
  }

  /** From SVC_MASTER_KEY's text form: 64 hex digits or base64/base64url of 32 bytes. */
  static parse(text: string): MasterKey {
    const s = text.trim()
    if (/^[0-9a-fA-F]{64}$/.test(s)) return new MasterKey(Buffer.from(s, 'hex'))
    const b = Buffer.from(s.replace(/-/g, '+').replace(/_/g, '/'), 'base64')
    if (b.length !== 32) throw new TypeError('SVC_MASTER_KEY must be 32 bytes, written as 64 hex digits or base64')
    return new MasterKey(b)
  }

  /** A fresh random key (tests, first start). */
  static generate(): MasterKey {
    return new MasterKey(randomBytes(32))
  }

  /** The key's text form, for writing the generated key file once. */
  toBase64(): string {
    return this.#key.toString('base64')
  }

  /** AES-256-GCM with a fresh 96-bit nonce per call; `aad` binds the ciphertext to its owner. */
  encrypt(plaintext: string, aad = ''): string {
    const nonce = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.#key, nonce)
    cipher.setAAD(Buffer.from(aad))
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()])
    return ['v1', this.keyId, nonce.toString('base64url'), body.toString('base64url')].join('.')
  }

  /** Decrypts an envelope made by `encrypt` under this key; a wrong key or tampering never yields garbage. */
  decrypt(envelope: string, aad = ''): string {
    const parts = envelope.split('.')
    if (parts.length !== 4 || parts[0] !== 'v1') throw new SlawError('internal_error', 'Encrypted value is not a slaw envelope.')
    const [, keyId, nonceText, bodyText] = parts as [string, string, string, string]
    if (keyId !== this.keyId) {
      throw new SlawError('internal_error', `Encrypted value was written under master key ${keyId}, but this node holds ${this.keyId}: check SVC_MASTER_KEY.`)
    }
    const body = Buffer.from(bodyText, 'base64url')
    const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(nonceText, 'base64url'))
    decipher.setAAD(Buffer.from(aad))
    decipher.setAuthTag(body.subarray(body.length - 16))
    try {
      return Buffer.concat([decipher.update(body.subarray(0, body.length - 16)), decipher.final()]).toString('utf8')
    } catch {
      throw new SlawError('internal_error', 'Encrypted value failed authentication (wrong master key or tampered data).')
    }
  }

  /** The key id an envelope was written under, without decrypting it. */
  static envelopeKeyId(envelope: string): string | undefined {
    const parts = envelope.split('.')
    return parts.length === 4 && parts[0] === 'v1' ? parts[1] : undefined
  }

  /** A purpose-bound subkey (HKDF-SHA256), e.g. `derive('run-token')` for signing run JWTs. */
  derive(purpose: string, length = 32): Uint8Array {
    return new Uint8Array(hkdfSync('sha256', this.#key, Buffer.alloc(0), `slaw:${purpose}`, length))
  }
}
