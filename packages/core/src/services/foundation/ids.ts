import { randomBytes, createHash } from 'node:crypto'

let lastMs = 0
let counter = 0

// Random bytes drawn 4 KiB at a time (as crypto.randomUUID does): one getrandom call per 256 ids
// instead of one per id, which showed as 2 % of an issue create's CPU.
const poolSize = 4096
let pool = randomBytes(poolSize)
let offset = 0

/** 16 fresh random bytes: a view of the pool never handed out again (callers write into it). */
function random16(): Buffer {
  if (offset + 16 > poolSize) {
    pool = randomBytes(poolSize)
    offset = 0
  }
  const b = pool.subarray(offset, offset + 16)
  offset += 16
  return b
}

/**
 * UUIDv7: time-ordered, so new rows land at the right edge of their indexes instead of all over
 * them. Node 20 has no built-in v7; this is the RFC 9562 layout (48-bit ms time, version, random).
 *
 * Ids made in this process are strictly increasing (RFC 9562 method 1: the 12 `rand_a` bits are a
 * counter that starts at a random value below 2048 each millisecond), because lists sort by id:
 * two comments or activity entries written in the same millisecond must keep their order, or an
 * `after` cursor would skip one. With `at` given (a backdated event), the id is simply of that time.
 */
export function uuidv7(at?: number): string {
  const b = random16()
  let ms: number
  let seq: number
  if (at !== undefined) {
    ms = at
    seq = b.readUInt16BE(6) & 0x0fff
  } else {
    ms = Date.now()
    if (ms > lastMs) {
      counter = b.readUInt16BE(6) & 0x07ff
    } else {
      // Same millisecond (or the clock stepped back): count on from the last id; past 4095, borrow the next millisecond.
      ms = lastMs
      counter++
      if (counter > 0x0fff) {
        ms = lastMs + 1
        counter = b.readUInt16BE(6) & 0x07ff
      }
    }
    lastMs = ms
    seq = counter
  }
  b.writeUIntBE(ms, 0, 6)
  b[6] = 0x70 | (seq >> 8)
  b[7] = seq & 0xff
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
