import type { FastifyRequest } from 'fastify'

/** The console session cookie (docs/console.md). */
export const sessionCookieName = 'slaw_session'

/** The value of cookie `name` in a Cookie header, or undefined. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq < 0) continue
    if (part.slice(0, eq).trim() !== name) continue
    const value = part.slice(eq + 1).trim()
    return value.startsWith('"') && value.endsWith('"') && value.length >= 2 ? value.slice(1, -1) : value
  }
  return undefined
}

/**
 * The schemes the request may have come in by: its own, and the one a TLS-terminating proxy names
 * in `X-Forwarded-Proto`. (A page of another origin cannot set that header on a request that
 * carries the cookie: a form cannot, and a script's custom header needs a CORS preflight no slaw
 * server answers.)
 */
function schemes(request: FastifyRequest): string[] {
  const forwarded = request.headers['x-forwarded-proto']
  const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim().toLowerCase()
  return first === 'https' || first === 'http' ? [request.protocol, first] : [request.protocol]
}

/**
 * `Set-Cookie` for a session token that lives `maxAgeSec`; `Secure` when the request came over https
 * (directly, or through a proxy that says so in `X-Forwarded-Proto`).
 */
export function sessionCookie(request: FastifyRequest, token: string, maxAgeSec: number, name = sessionCookieName): string {
  return `${name}=${token}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${Math.max(0, Math.floor(maxAgeSec))}${schemes(request).includes('https') ? '; Secure' : ''}`
}

/** `Set-Cookie` that makes the browser drop the session cookie. */
export function clearSessionCookie(request: FastifyRequest, name = sessionCookieName): string {
  return sessionCookie(request, '', 0, name)
}

const mutating = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/**
 * Whether a cookie-authenticated request may proceed: safe methods always; a mutation only when its
 * `Origin` equals the request's own origin (scheme://host[:port] from the Host header; the scheme may
 * be the one `X-Forwarded-Proto` names). SameSite=Strict
 * already keeps other sites' requests from carrying the cookie; this refuses what slips past it.
 */
export function sameOriginOrSafe(request: FastifyRequest): boolean {
  if (!mutating.has(request.method)) return true
  const origin = request.headers.origin
  const host = request.headers.host
  if (typeof origin !== 'string' || !host) return false
  return schemes(request).some((scheme) => origin.toLowerCase() === `${scheme}://${host}`.toLowerCase())
}
