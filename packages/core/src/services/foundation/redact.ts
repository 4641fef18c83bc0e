/**
 * Redaction for activity details and logs: sensitive keys lose their values, and values that look
 * like credentials (bearer tokens, JWTs, private keys, well-known key formats) are masked wherever
 * they appear.
 *
 * Keys are compared lowercased without separators (`api_key`, `apiKey`, `API-Key` alike). `token`
 * counts unless it names a quantity (`inputTokens`, `maxTokens`, `tokenLimit`): those are figures.
 */
const sensitiveKeyPart = /(secret|password|passwd|passphrase|apikey|authorization|credential|privatekey|accesskey|cookie|sessionkey|token(?!s|count|limit|usage|budget|ceiling))/
const sensitiveKeyExact = new Set(['auth', 'pwd', 'pass'])
function isSensitiveKey(key: string): boolean {
  const k = key.toLowerCase().replace(/[^a-z0-9]/g, '')
  return sensitiveKeyExact.has(k) || sensitiveKeyPart.test(k)
}
const bearerLike = /\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi
const jwtLike = /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g
const privateKeyBlock = /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)/g
/** Token formats that are credentials wherever they appear. */
const knownTokenFormats = [
  /slaw_(?:op|ak|run|wh)_[A-Za-z0-9_-]{10,}/, // slaw's own keys and tokens
  /sk-[A-Za-z0-9_-]{16,}/, // OpenAI, Anthropic
  /gh[pousr]_[A-Za-z0-9]{20,}/, // GitHub
  /github_pat_[A-Za-z0-9_]{20,}/,
  /glpat-[A-Za-z0-9_-]{16,}/, // GitLab
  /xox[abpre]-[A-Za-z0-9-]{10,}/, // Slack
  /(?:AKIA|ASIA)[0-9A-Z]{16}/, // AWS access key ids
  /AIza[0-9A-Za-z_-]{30,}/, // Google API keys
]
const knownTokens = new RegExp(`\\b(${knownTokenFormats.map((f) => f.source).join('|')})`, 'g')

const REDACTED = '[REDACTED]'

export function redactString(value: string): string {
  return value.replace(privateKeyBlock, REDACTED).replace(bearerLike, `$1${REDACTED}`).replace(jwtLike, REDACTED).replace(knownTokens, REDACTED)
}

export function redact<T>(value: T, depth = 0): T {
  if (depth > 8) return REDACTED as T
  if (typeof value === 'string') return redactString(value) as T
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1)) as T
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = isSensitiveKey(k) ? REDACTED : redact(v, depth + 1)
    return out as T
  }
  return value
}
