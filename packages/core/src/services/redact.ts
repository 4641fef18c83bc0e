/**
 * Redaction for activity details and logs: sensitive keys lose their values, and values that look
 * like credentials are masked wherever they appear.
 */
const sensitiveKey = /(token|secret|password|passwd|apikey|api_key|authorization|credential|private_?key|access_?key|cookie|session_?key)/i
const bearerLike = /\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi
const privateKeyBlock = /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)/g
const knownTokens = /\b(slaw_(?:op|ak|run)_[A-Za-z0-9_-]{10,}|sk-[A-Za-z0-9_-]{16,}|ghp_[A-Za-z0-9]{20,}|xox[abp]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})/g

export const REDACTED = '[REDACTED]'

export function redactString(value: string): string {
  return value.replace(privateKeyBlock, REDACTED).replace(bearerLike, `$1${REDACTED}`).replace(knownTokens, REDACTED)
}

export function redact<T>(value: T, depth = 0): T {
  if (depth > 8) return REDACTED as T
  if (typeof value === 'string') return redactString(value) as T
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1)) as T
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = sensitiveKey.test(k) ? REDACTED : redact(v, depth + 1)
    return out as T
  }
  return value
}
