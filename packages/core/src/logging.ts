/**
 * What slaw's logs must never carry: bearer tokens, enrollment secrets, keys passed in a query
 * string. The paths are pino redaction paths; `scrubUrl` is applied to every logged request URL.
 */
export const secretLogPaths = [
  'authorization',
  '*.authorization',
  '*.*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  'request.headers.authorization',
  '*.headers["x-enrollment-secret"]',
  '*.headers["x-botfather-enrollment-secret"]',
  '*.enrollmentSecret',
]

/** Query parameters whose values are credentials (case-insensitive). */
const secretParams = /^(token|key|api[_-]?key|secret|access[_-]?token|password)$/i

/**
 * Path segments that are credentials: a routine trigger's public id is the whole credential of a
 * trigger with `signingMode: none` (its fire URL is `/api/routine-triggers/public/<id>/fire`).
 */
const secretPathSegment = /(\/routine-triggers\/public\/)[^/?#]+/gi

/**
 * The URL with the value of every credential-like query parameter, and a public trigger id in the
 * path, replaced by `[REDACTED]`.
 */
export function scrubUrl(url: string): string {
  url = url.replace(secretPathSegment, '$1[REDACTED]')
  const q = url.indexOf('?')
  if (q < 0) return url
  const parts = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=')
      const rawName = eq < 0 ? pair : pair.slice(0, eq)
      let name = rawName
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '))
      } catch {
        // Not valid percent-encoding: judge the raw name.
      }
      return secretParams.test(name) && eq >= 0 ? `${rawName}=[REDACTED]` : pair
    })
  return `${url.slice(0, q)}?${parts.join('&')}`
}

interface LoggedRequest {
  method?: string
  url?: string
  host?: string
  ip?: string
  socket?: { remotePort?: number }
}

/** fastify's request serializer with the URL scrubbed. */
export function requestSerializer(req: LoggedRequest): Record<string, unknown> {
  return {
    method: req.method,
    url: typeof req.url === 'string' ? scrubUrl(req.url) : req.url,
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  }
}
