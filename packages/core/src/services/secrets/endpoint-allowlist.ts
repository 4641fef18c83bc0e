/**
 * Where a node may send its own credentials (a Vault token, a cloud OAuth token, a signed request).
 * A provider configuration is written through the API, so an address in it is chosen by whoever
 * holds an Operator key; the node's credentials go only to addresses the node itself allows: its
 * own defaults (e.g. `VAULT_ADDR`) and an allowlist in its environment.
 */

/**
 * Splits an allowlist (`SVC_VAULT_ALLOWED_ADDRESSES` and the like): entries separated by commas or
 * whitespace, empty ones dropped.
 */
export function parseEndpointAllowList(text: string | undefined): string[] {
  return (text ?? '')
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean)
}

/**
 * Whether `url` matches one allowlist entry. An entry with a scheme (`https://vault.internal:8200`)
 * matches that exact origin (scheme, host and port); a bare host (`vault.internal`, `127.0.0.1`,
 * `[::1]`) matches that host on any scheme and port; `*.example.com` matches any host under
 * example.com (not example.com itself). Hosts compare case-insensitively.
 */
export function endpointAllowed(url: string, allowList: readonly string[]): boolean {
  let target: URL
  try {
    target = new URL(url)
  } catch {
    return false
  }
  const host = target.hostname.toLowerCase()
  return allowList.some((entry) => {
    const e = entry.trim().toLowerCase()
    if (!e) return false
    if (e.includes('://')) {
      try {
        return new URL(e).origin === target.origin
      } catch {
        return false
      }
    }
    if (e.startsWith('*.')) return host.endsWith(e.slice(1)) && host.length > e.length - 1
    return host === e
  })
}

/** The origin of a URL for messages (no path, no query: those may carry tokens). */
export function endpointOrigin(url: string): string {
  try {
    return new URL(url).origin
  } catch {
    return '(not a URL)'
  }
}
