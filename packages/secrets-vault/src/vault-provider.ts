import type { SecretProvider } from '@slaw/core/secret-provider'
import { SecretProviderError, endpointAllowed, endpointOrigin, parseEndpointAllowList, providerConfigError, readProviderConfig } from '@slaw/core/secret-provider'
import { parseRef, formatRef, type VaultRef } from './refs.js'

/** Where a provider gets its Vault token: a string, or a function asked before every call (renewal). */
export type VaultTokenSource = string | (() => string | Promise<string>)

export interface VaultProviderOptions {
  /** The Vault token. Default: `VAULT_TOKEN` from the environment, read at each call. */
  token?: VaultTokenSource
  /** How long one HTTP call may take, in ms, unless a config sets `timeoutMs`. Default 10,000. */
  timeoutMs?: number
  /** The fetch to use (tests, proxies). Default: Node's global fetch. */
  fetch?: typeof fetch
  /** Where `VAULT_ADDR`, `VAULT_NAMESPACE`, `VAULT_TOKEN` and `SVC_VAULT_ALLOWED_ADDRESSES` are read. Default `process.env`. */
  env?: Record<string, string | undefined>
  /**
   * Addresses besides `VAULT_ADDR` this node may send its Vault token to (origins such as
   * `https://vault.internal:8200`, bare hosts for any port, `*.example.com`). Default:
   * `SVC_VAULT_ALLOWED_ADDRESSES` (comma- or space-separated).
   */
  allowedAddresses?: readonly string[]
}

/** Config keys a `vault` provider configuration may hold (never a token: that comes from `VAULT_TOKEN`). */
export const vaultConfigKeys = ['address', 'namespace', 'mount', 'prefix', 'timeoutMs'] as const

interface VaultConfig {
  address: string
  namespace?: string
  mount: string
  prefix: string
  timeoutMs: number
}

/** The most leaf paths `listRemote` walks under a mount before it stops and says so. */
const maxListed = 5_000

/**
 * A `SecretProvider` on HashiCorp Vault's KV version 2 secrets engine, over its HTTP API.
 *
 * - `store` writes `{ value }` as a new version of `<mount>/<prefix><secretId>` and answers the ref
 *   `<prefix><secretId>?version=<n>`.
 * - `resolve` reads that version (a ref without `version` reads the latest; `field=<name>` picks a
 *   key of a secret holding several, as imported ones often do).
 * - `delete` destroys the ref's version for good, and the secret's metadata once no live version is left.
 * - `listRemote` walks `LIST <mount>/metadata/` for import.
 */
export function vaultProvider(options: VaultProviderOptions = {}): SecretProvider {
  const env = options.env ?? process.env
  const fetchFn = options.fetch ?? fetch
  const defaultTimeoutMs = options.timeoutMs ?? 10_000

  // The node's token goes to the node's own VAULT_ADDR (or the local default when unset) and to the
  // addresses its environment allows, never to an address only a provider configuration names.
  const defaultAddress = (env.VAULT_ADDR || 'http://127.0.0.1:8200').replace(/\/+$/, '')
  const allowed = [endpointOrigin(defaultAddress), ...(options.allowedAddresses ?? parseEndpointAllowList(env.SVC_VAULT_ALLOWED_ADDRESSES))]
  const addressProblem = (address: string): string | undefined =>
    endpointAllowed(address, allowed)
      ? undefined
      : `address ${endpointOrigin(address)} is not one this node sends its Vault token to (VAULT_ADDR, or an entry of SVC_VAULT_ALLOWED_ADDRESSES on every node)`

  const parseConfig = (raw: Record<string, unknown>): VaultConfig => {
    const config = readProviderConfig('vault', vaultConfigKeys, raw)
    const address = (config.string('address') ?? defaultAddress).replace(/\/+$/, '')
    if (!/^https?:\/\/[^/]+/.test(address)) throw invalid(`config address must be an http(s) URL (got ${address})`)
    const refused = addressProblem(address)
    if (refused) throw invalid(`config ${refused}`)
    const mount = (config.string('mount') ?? 'secret').replace(/^\/+|\/+$/g, '')
    if (!mount) throw invalid('config mount must not be empty')
    const prefix = (config.string('prefix') ?? 'slaw/').replace(/^\/+/, '')
    const namespace = config.string('namespace') ?? env.VAULT_NAMESPACE
    const timeoutMs = config.integer('timeoutMs', 1, 300_000) ?? defaultTimeoutMs
    return { address, mount, prefix, timeoutMs, ...(namespace ? { namespace } : {}) }
  }

  const token = async (): Promise<string> => {
    const source = options.token ?? env.VAULT_TOKEN
    const value = typeof source === 'function' ? await source() : source
    if (!value) throw invalid('no Vault token: set VAULT_TOKEN in the environment of every slaw node (or pass token to vaultProvider())')
    return value
  }

  /** One HTTP call to Vault; network failures become SecretProviderErrors naming `what`. */
  const call = async (cfg: VaultConfig, what: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> => {
    const headers: Record<string, string> = { 'X-Vault-Token': await token(), 'X-Vault-Request': 'true' }
    if (cfg.namespace) headers['X-Vault-Namespace'] = cfg.namespace
    if (body !== undefined) headers['Content-Type'] = 'application/json'
    let response: Response
    try {
      response = await fetchFn(`${cfg.address}/v1/${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(cfg.timeoutMs),
      })
    } catch (error) {
      throw networkError(error, what, cfg)
    }
    let text: string
    try {
      text = await response.text()
    } catch (error) {
      throw networkError(error, what, cfg)
    }
    let json: any
    try {
      json = text ? JSON.parse(text) : undefined
    } catch {
      json = undefined
    }
    return { status: response.status, json }
  }

  /** The error for a Vault answer that is not a success. Vault's `errors` never echo a written value. */
  const answerError = (what: string, status: number, json: any): SecretProviderError => {
    const said = Array.isArray(json?.errors) && json.errors.length ? `: ${json.errors.map(String).join('; ').slice(0, 300)}` : ''
    if (status === 404) return new SecretProviderError('not_found', `vault ${what}: not found${said}`)
    if (status === 401 || status === 403) return new SecretProviderError('access_denied', `vault ${what}: permission denied (HTTP ${status}); check the token's policies${said}`)
    if (status === 400) return new SecretProviderError('invalid_config', `vault ${what}: rejected (HTTP 400)${said}`)
    return new SecretProviderError('unavailable', `vault ${what}: HTTP ${status}${said}`)
  }

  const dataPath = (cfg: VaultConfig, path: string, kind: 'data' | 'metadata' | 'destroy') => `${encodePath(cfg.mount)}/${kind}/${encodePath(path)}`

  const read = async (cfg: VaultConfig, ref: VaultRef): Promise<string> => {
    const what = `read ${cfg.mount}/${formatRef(ref)}`
    const query = ref.version === undefined ? '' : `?version=${ref.version}`
    const { status, json } = await call(cfg, what, 'GET', dataPath(cfg, ref.path, 'data') + query)
    if (status !== 200) throw answerError(what, status, json)
    const data = json?.data?.data
    const meta = json?.data?.metadata
    if (!data || typeof data !== 'object' || meta?.destroyed || (meta?.deletion_time && meta.deletion_time !== '')) {
      throw new SecretProviderError('not_found', `vault ${what}: the version is deleted`)
    }
    const keys = Object.keys(data)
    const field = ref.field ?? (keys.length === 1 ? keys[0] : 'value')
    if (!field || !(field in data)) {
      throw new SecretProviderError('not_found', `vault ${what}: no field ${field ?? ''}; it holds ${keys.join(', ') || 'no fields'}; name one with ?field=<name>`)
    }
    const value = data[field]
    return typeof value === 'string' ? value : JSON.stringify(value)
  }

  return {
    type: 'vault',
    configKeys: vaultConfigKeys,

    async store({ secretId, value, config }) {
      const cfg = parseConfig(config)
      const path = `${cfg.prefix}${secretId}`
      const what = `write ${cfg.mount}/${path}`
      const { status, json } = await call(cfg, what, 'POST', dataPath(cfg, path, 'data'), { data: { value } })
      if (status !== 200 && status !== 204) throw scrub(answerError(what, status, json), value)
      const version = json?.data?.version
      if (!Number.isInteger(version)) throw new SecretProviderError('unavailable', `vault ${what}: the answer named no version`)
      return { ref: formatRef({ path, version }) }
    },

    async resolve({ ref, config }) {
      const cfg = parseConfig(config)
      return read(cfg, parseRef(ref))
    },

    async delete({ ref, config }) {
      const cfg = parseConfig(config)
      const parsed = parseRef(ref)
      const what = `delete ${cfg.mount}/${formatRef(parsed)}`
      if (parsed.version !== undefined) {
        const destroyed = await call(cfg, what, 'POST', dataPath(cfg, parsed.path, 'destroy'), { versions: [parsed.version] })
        if (![200, 204, 404].includes(destroyed.status)) throw answerError(what, destroyed.status, destroyed.json)
        // Once no version is live, drop the metadata too, so the path leaves listings.
        const meta = await call(cfg, what, 'GET', dataPath(cfg, parsed.path, 'metadata'))
        if (meta.status === 404) return
        if (meta.status !== 200) throw answerError(what, meta.status, meta.json)
        const versions = Object.values(meta.json?.data?.versions ?? {}) as Array<{ destroyed?: boolean; deletion_time?: string }>
        if (versions.some((v) => !v.destroyed && !v.deletion_time)) return
      }
      const removed = await call(cfg, what, 'DELETE', dataPath(cfg, parsed.path, 'metadata'))
      if (![200, 204, 404].includes(removed.status)) throw answerError(what, removed.status, removed.json)
    },

    validateConfig(config) {
      const address = config.address
      if (typeof address !== 'string' || !/^https?:\/\/[^/]+/.test(address)) return []
      const refused = addressProblem(address.replace(/\/+$/, ''))
      return refused ? [{ path: '/address', message: refused }] : []
    },

    async health(config) {
      try {
        const cfg = parseConfig(config)
        const self = await call(cfg, 'token lookup', 'GET', 'auth/token/lookup-self')
        if (self.status !== 200) return { ok: false, message: answerError('token lookup', self.status, self.json).message }
        const what = `list ${cfg.mount}/${cfg.prefix}`
        const list = await call(cfg, what, 'GET', `${dataPath(cfg, cfg.prefix, 'metadata')}?list=true`)
        if (list.status !== 200 && list.status !== 404) return { ok: false, message: answerError(what, list.status, list.json).message }
        return { ok: true }
      } catch (error) {
        return { ok: false, message: error instanceof SecretProviderError ? error.message : 'vault health check failed' }
      }
    },

    async listRemote({ config, query, pageSize, nextToken }) {
      const cfg = parseConfig(config)
      const start = nextToken === undefined ? 0 : Number.parseInt(nextToken, 10)
      if (!Number.isInteger(start) || start < 0) throw invalid('nextToken is not one this provider gave')
      const paths: string[] = []
      // Vault's LIST neither filters nor pages: walk the tree, then filter and page here.
      const folders = ['']
      while (folders.length && paths.length < maxListed) {
        const folder = folders.shift()!
        const what = `list ${cfg.mount}/${folder}`
        const { status, json } = await call(cfg, what, 'GET', `${encodePath(cfg.mount)}/metadata/${encodePath(folder)}?list=true`)
        if (status === 404) continue
        if (status !== 200) throw answerError(what, status, json)
        for (const key of (json?.data?.keys ?? []) as string[]) {
          if (key.endsWith('/')) folders.push(folder + key)
          else paths.push(folder + key)
        }
      }
      const needle = query?.toLowerCase()
      const matches = paths.filter((p) => !needle || p.toLowerCase().includes(needle)).sort()
      const items = matches.slice(start, start + pageSize).map((path) => ({ externalRef: path, name: path }))
      const next = start + pageSize
      return next < matches.length ? { items, nextToken: String(next) } : { items }
    },
  }
}

function invalid(message: string): SecretProviderError {
  return providerConfigError('vault', message)
}

function encodePath(path: string): string {
  return path
    .split('/')
    .map((segment) => encodeURIComponent(segment))
    .join('/')
}

/** A fetch failure as a SecretProviderError: timeout, or Vault out of reach. The cause is left out: it may hold the request. */
function networkError(error: unknown, what: string, cfg: VaultConfig): SecretProviderError {
  const name = error instanceof Error ? error.name : ''
  if (name === 'TimeoutError' || name === 'AbortError') {
    return new SecretProviderError('timeout', `vault ${what}: no answer from ${cfg.address} within ${cfg.timeoutMs} ms`)
  }
  const cause = error instanceof Error ? (error.cause as { code?: string } | undefined) : undefined
  const code = cause?.code ?? (error as { code?: string } | undefined)?.code
  const why = code ? ` (${code})` : ''
  return new SecretProviderError('unavailable', `vault ${what}: cannot reach ${cfg.address}${why}`)
}

/** Belt and braces: an error about a write never repeats what was written. */
function scrub(error: SecretProviderError, value: string): SecretProviderError {
  if (!value || !error.message.includes(value)) return error
  return new SecretProviderError(error.code, error.message.split(value).join('[value]'))
}
