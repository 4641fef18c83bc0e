import { AsyncLocalStorage } from 'node:async_hooks'
import type { SecretManagerServiceClient } from '@google-cloud/secret-manager'
import type { SecretProvider } from '@slaw/core/secret-provider'
import { SecretProviderError, endpointAllowed, parseEndpointAllowList, providerConfigError, readProviderConfig } from '@slaw/core/secret-provider'

type ClientOptions = NonNullable<ConstructorParameters<typeof SecretManagerServiceClient>[0]>

export interface GcpSecretManagerProviderOptions {
  /**
   * Extra options for every `SecretManagerServiceClient` the provider creates, e.g. `auth` (a
   * `GoogleAuth` of your own) or `keyFilename`. Default: application default credentials.
   */
  clientOptions?: ClientOptions
  /** How long one call may take, in ms, unless a config sets `timeoutMs`. Default 10,000. */
  timeoutMs?: number
  /**
   * Endpoints a config's `apiEndpoint` may name besides Google's own (`https://*.googleapis.com`):
   * origins, bare hosts (any port) or `*.example.com`. Default: `SVC_GCP_ALLOWED_ENDPOINTS`
   * (comma- or space-separated).
   */
  allowedEndpoints?: readonly string[]
}

/** Config keys a `gcp_secret_manager` provider configuration may hold (credentials never: ADC supplies them). */
export const gcpConfigKeys = ['projectId', 'apiEndpoint', 'prefix', 'replicationLocations', 'kmsKeyName', 'timeoutMs'] as const

interface GcpConfig {
  projectId?: string
  /** Host (and port) of the API, and whether it speaks plain http (a local endpoint). */
  endpoint?: { host: string; port?: number; protocol: 'http' | 'https' }
  prefix: string
  replicationLocations?: string[]
  kmsKeyName?: string
  timeoutMs: number
}

/**
 * A `SecretProvider` on Google Cloud Secret Manager, through `@google-cloud/secret-manager` over its
 * REST transport (`fallback: true`: HTTP/1.1 + JSON, no gRPC channel to keep, one protocol for
 * production and for a local endpoint).
 *
 * - `store` adds a secret version to `projects/<projectId>/secrets/<prefix><secretId>` (creating the
 *   secret on its first store, with the configured replication) and answers the version's resource
 *   name, `projects/…/secrets/…/versions/<n>`.
 * - `resolve` accesses that version; an imported secret's name (no `/versions/`) reads `latest`.
 * - `delete` destroys the version, and deletes the secret once no enabled or disabled version is left.
 * - `listRemote` is ListSecrets with a `name:` filter and page tokens.
 */
export function gcpSecretManagerProvider(options: GcpSecretManagerProviderOptions = {}): SecretProvider {
  const defaultTimeoutMs = options.timeoutMs ?? 10_000
  const clients = new Map<string, SecretManagerServiceClient>()

  // The node's OAuth token goes only to Google's own endpoints over https and to the node's
  // allowlist, never to an endpoint only a provider configuration names.
  const endpointProblem = (endpoint: NonNullable<GcpConfig['endpoint']>): string | undefined => {
    const url = where({ endpoint } as GcpConfig)
    if (endpoint.protocol === 'https' && /(^|\.)googleapis\.com$/i.test(endpoint.host)) return undefined
    if (endpointAllowed(url, options.allowedEndpoints ?? parseEndpointAllowList(process.env.SVC_GCP_ALLOWED_ENDPOINTS))) return undefined
    return `apiEndpoint ${url} is not one this node sends its Google credentials to (Google's own, or an entry of SVC_GCP_ALLOWED_ENDPOINTS on every node)`
  }

  const parseConfig = (raw: Record<string, unknown>): GcpConfig => {
    const config = readProviderConfig('gcp_secret_manager', gcpConfigKeys, raw)
    const prefix = raw.prefix === undefined ? 'slaw-' : raw.prefix
    if (typeof prefix !== 'string' || !/^[A-Za-z0-9_-]*$/.test(prefix)) throw invalid('config prefix may hold only letters, digits, _ and -')
    const timeoutMs = config.integer('timeoutMs', 1, 300_000) ?? defaultTimeoutMs
    const cfg: GcpConfig = { prefix, timeoutMs }
    const projectId = config.nonEmptyString('projectId')
    if (projectId) {
      if (!/^[a-z0-9.:-]{1,100}$/.test(projectId)) throw invalid(`config projectId ${projectId} is not a project id or number`)
      cfg.projectId = projectId
    }
    const apiEndpoint = config.nonEmptyString('apiEndpoint')
    if (apiEndpoint) {
      cfg.endpoint = parseEndpoint(apiEndpoint)
      const refused = endpointProblem(cfg.endpoint)
      if (refused) throw invalid(`config ${refused}`)
    }
    const locations = raw.replicationLocations
    if (locations !== undefined && locations !== null) {
      if (!Array.isArray(locations) || !locations.length || !locations.every((l) => typeof l === 'string' && /^[a-z0-9-]+$/.test(l))) {
        throw invalid('config replicationLocations must be a non-empty list of locations like "europe-west1"')
      }
      cfg.replicationLocations = locations as string[]
    }
    const kmsKeyName = config.nonEmptyString('kmsKeyName')
    if (kmsKeyName) cfg.kmsKeyName = kmsKeyName
    return cfg
  }

  const client = async (cfg: GcpConfig): Promise<SecretManagerServiceClient> => {
    const key = JSON.stringify([cfg.endpoint, cfg.projectId])
    let found = clients.get(key)
    if (!found) {
      const { SecretManagerServiceClient } = await loadSdk()
      // Another call may have made it while the SDK loaded.
      found = clients.get(key)
      if (found) return found
      found = new SecretManagerServiceClient({
        ...options.clientOptions,
        fallback: true,
        ...(cfg.projectId ? { projectId: cfg.projectId } : {}),
        ...(cfg.endpoint ? { apiEndpoint: cfg.endpoint.host, protocol: cfg.endpoint.protocol, ...(cfg.endpoint.port ? { port: cfg.endpoint.port } : {}) } : {}),
      } as ClientOptions)
      abortable(found.auth)
      clients.set(key, found)
    }
    return found
  }

  /** One call, bounded by the config's timeout (the gax call is cancelled when it is over); maps every failure. */
  const call = async <T>(cfg: GcpConfig, what: string, run: (c: SecretManagerServiceClient, callOptions: { timeout: number }) => Promise<T>): Promise<T> => {
    let timer: NodeJS.Timeout | undefined
    const controller = new AbortController()
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        // Abort the HTTP request itself, so a hung endpoint does not keep a socket per call.
        controller.abort()
        reject(new SecretProviderError('timeout', `gcp_secret_manager ${what}: no answer from ${where(cfg)} within ${cfg.timeoutMs} ms`))
      }, cfg.timeoutMs)
    })
    try {
      const c = await Promise.race([client(cfg), timedOut])
      const pending = callSignal.run(controller.signal, () => run(c, { timeout: cfg.timeoutMs }))
      pending.catch(() => {})
      return await Promise.race([pending, timedOut])
    } catch (error) {
      throw mapError(error, what, cfg)
    } finally {
      clearTimeout(timer)
    }
  }

  const project = async (cfg: GcpConfig): Promise<string> => {
    if (cfg.projectId) return cfg.projectId
    return call(cfg, 'find the project', (c) => c.getProjectId() as Promise<string>).catch((error: unknown) => {
      throw error instanceof SecretProviderError && error.code !== 'timeout' ? invalid('no projectId in the config and none from the application default credentials or GOOGLE_CLOUD_PROJECT') : error
    })
  }

  /** Secret or version resource names from a ref: `projects/p/secrets/s[/versions/v]`, or a bare secret id. */
  const parseRef = async (cfg: GcpConfig, ref: string): Promise<{ secret: string; version?: string }> => {
    const full = /^(projects\/[^/]+\/(?:locations\/[^/]+\/)?secrets\/[A-Za-z0-9_-]+)(?:\/versions\/([A-Za-z0-9_-]+))?$/.exec(ref)
    if (full) return full[2] ? { secret: full[1]!, version: `${full[1]}/versions/${full[2]}` } : { secret: full[1]! }
    if (/^[A-Za-z0-9_-]{1,255}$/.test(ref)) return { secret: `projects/${await project(cfg)}/secrets/${ref}` }
    throw new SecretProviderError('not_found', `gcp_secret_manager: ${ref.slice(0, 200)} is not a secret or version name`)
  }

  return {
    type: 'gcp_secret_manager',
    configKeys: gcpConfigKeys,

    async store({ secretId, value, config }) {
      const cfg = parseConfig(config)
      const id = `${cfg.prefix}${secretId}`
      if (!/^[A-Za-z0-9_-]{1,255}$/.test(id)) throw invalid(`secret id ${id} is not a valid Secret Manager id`)
      const parent = `projects/${await project(cfg)}`
      const secret = `${parent}/secrets/${id}`
      const add = () => call(cfg, `add a version to ${secret}`, (c, o) => c.addSecretVersion({ parent: secret, payload: { data: Buffer.from(value, 'utf8') } }, o))
      const create = () =>
        call(cfg, `create ${secret}`, (c, o) =>
          c.createSecret(
            {
              parent,
              secretId: id,
              secret: {
                labels: { 'managed-by': 'slaw' },
                replication: cfg.replicationLocations
                  ? { userManaged: { replicas: cfg.replicationLocations.map((location) => ({ location, ...(cfg.kmsKeyName ? { customerManagedEncryption: { kmsKeyName: cfg.kmsKeyName } } : {}) })) } }
                  : { automatic: cfg.kmsKeyName ? { customerManagedEncryption: { kmsKeyName: cfg.kmsKeyName } } : {} },
              },
            },
            o,
          ),
        )
      try {
        let added
        try {
          added = await add()
        } catch (error) {
          if (!(error instanceof SecretProviderError) || error.code !== 'not_found') throw error
          // The first store of a secret creates it; a concurrent first store may have created it already.
          await create().catch((again: unknown) => {
            if (!(again instanceof GcpSecretProviderError && again.status === 'ALREADY_EXISTS')) throw again
          })
          added = await add()
        }
        const name = added[0]?.name
        if (!name) throw new SecretProviderError('unavailable', `gcp_secret_manager add a version to ${secret}: the answer named no version`)
        return { ref: name }
      } catch (error) {
        throw scrub(error, value)
      }
    },

    async resolve({ ref, config }) {
      const cfg = parseConfig(config)
      const parsed = await parseRef(cfg, ref)
      const name = parsed.version ?? `${parsed.secret}/versions/latest`
      const [answer] = await call(cfg, `access ${name}`, (c, o) => c.accessSecretVersion({ name }, o))
      const data = answer?.payload?.data
      if (data === undefined || data === null) throw new SecretProviderError('not_found', `gcp_secret_manager access ${name}: the version holds no payload`)
      return typeof data === 'string' ? Buffer.from(data, 'base64').toString('utf8') : Buffer.from(data).toString('utf8')
    },

    async delete({ ref, config }) {
      const cfg = parseConfig(config)
      const parsed = await parseRef(cfg, ref)
      const gone = (error: unknown) => error instanceof GcpSecretProviderError && (error.status === 'NOT_FOUND' || (error.status === 'FAILED_PRECONDITION' && /DESTROYED/i.test(error.message)))
      if (parsed.version && !parsed.version.endsWith('/versions/latest')) {
        const name = parsed.version
        await call(cfg, `destroy ${name}`, (c, o) => c.destroySecretVersion({ name }, o)).catch((error: unknown) => {
          if (!gone(error)) throw error
        })
        // Keep the secret while another version is live; drop it with its last one, so it leaves listings.
        const live = await call(cfg, `list versions of ${parsed.secret}`, (c, o) =>
          c.listSecretVersions({ parent: parsed.secret, pageSize: 1, filter: 'state:(ENABLED OR DISABLED)' }, { ...o, autoPaginate: false }),
        ).catch((error: unknown) => {
          if (gone(error)) return undefined
          throw error
        })
        if (!live || live[0].length) return
      }
      await call(cfg, `delete ${parsed.secret}`, (c, o) => c.deleteSecret({ name: parsed.secret }, o)).catch((error: unknown) => {
        if (!gone(error)) throw error
      })
    },

    validateConfig(config) {
      if (typeof config.apiEndpoint !== 'string' || !config.apiEndpoint) return []
      let endpoint: NonNullable<GcpConfig['endpoint']>
      try {
        endpoint = parseEndpoint(config.apiEndpoint)
      } catch {
        return []
      }
      const refused = endpointProblem(endpoint)
      return refused ? [{ path: '/apiEndpoint', message: refused }] : []
    },

    async health(config) {
      try {
        const cfg = parseConfig(config)
        const parent = `projects/${await project(cfg)}`
        await call(cfg, `list secrets of ${parent}`, (c, o) => c.listSecrets({ parent, pageSize: 1 }, { ...o, autoPaginate: false }))
        return { ok: true }
      } catch (error) {
        return { ok: false, message: error instanceof SecretProviderError ? error.message : 'gcp_secret_manager health check failed' }
      }
    },

    async listRemote({ config, query, pageSize, nextToken }) {
      const cfg = parseConfig(config)
      const parent = `projects/${await project(cfg)}`
      // A secret id holds only these characters: a query with any other matches nothing (and never reaches the filter syntax).
      if (query !== undefined && !/^[A-Za-z0-9_-]*$/.test(query)) return { items: [] }
      const [secrets, , response] = await call(cfg, `list secrets of ${parent}`, (c, o) =>
        c.listSecrets({ parent, pageSize, ...(nextToken ? { pageToken: nextToken } : {}), ...(query ? { filter: `name:${query}` } : {}) }, { ...o, autoPaginate: false }),
      )
      const items = secrets.filter((s) => s.name).map((s) => ({ externalRef: s.name!, name: s.name!.split('/').at(-1)! }))
      const token = (response as { nextPageToken?: string | null } | undefined)?.nextPageToken
      return token ? { items, nextToken: token } : { items }
    },

    async close() {
      await Promise.all([...clients.values()].map((c) => c.close()))
      clients.clear()
    },
  }
}

/** A provider error that remembers the gRPC status, for the retry and idempotency decisions above. */
class GcpSecretProviderError extends SecretProviderError {
  constructor(
    code: ConstructorParameters<typeof SecretProviderError>[0],
    message: string,
    /** Google's status name, e.g. NOT_FOUND. */
    readonly status: string | undefined,
  ) {
    super(code, message)
  }
}

let sdkPromise: Promise<typeof import('@google-cloud/secret-manager')> | undefined
/** The client library, loaded on first use: registering the provider (at every `slaw start`) costs nothing until a configuration uses it. */
function loadSdk(): Promise<typeof import('@google-cloud/secret-manager')> {
  sdkPromise ??= import('@google-cloud/secret-manager')
  return sdkPromise
}

/** The abort signal of the provider call in progress, for the requests it makes. */
const callSignal = new AsyncLocalStorage<AbortSignal>()
const abortablePatched = Symbol.for('@slaw/secrets-gcp:abortable')

/**
 * The client's REST transport sends every request through its auth object's `fetch` and does not
 * enforce call timeouts itself; this wraps that `fetch` (once per auth object) so a request also
 * listens to the signal of the provider call that made it.
 */
function abortable(auth: unknown): void {
  const target = auth as { fetch?: (url: unknown, init?: { signal?: AbortSignal }) => Promise<unknown>; [abortablePatched]?: true }
  if (!target || typeof target.fetch !== 'function' || target[abortablePatched]) return
  const original = target.fetch.bind(target)
  target.fetch = (url, init = {}) => {
    const signal = callSignal.getStore()
    if (!signal) return original(url, init)
    return original(url, { ...init, signal: init.signal ? AbortSignal.any([init.signal, signal]) : signal })
  }
  target[abortablePatched] = true
}

function invalid(message: string): SecretProviderError {
  return providerConfigError('gcp_secret_manager', message)
}

function parseEndpoint(value: string): NonNullable<GcpConfig['endpoint']> {
  const url = /^(https?):\/\/([^/:]+)(?::(\d+))?\/?$/.exec(value)
  if (url) return { protocol: url[1] as 'http' | 'https', host: url[2]!, ...(url[3] ? { port: Number(url[3]) } : {}) }
  const host = /^([^/:]+)(?::(\d+))?$/.exec(value)
  if (host) return { protocol: 'https', host: host[1]!, ...(host[2] ? { port: Number(host[2]) } : {}) }
  throw invalid(`config apiEndpoint must be a host, host:port or http(s)://host:port (got ${value})`)
}

function where(cfg: GcpConfig): string {
  if (!cfg.endpoint) return 'secretmanager.googleapis.com'
  return `${cfg.endpoint.protocol}://${cfg.endpoint.host}${cfg.endpoint.port ? `:${cfg.endpoint.port}` : ''}`
}

const networkCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'UND_ERR_SOCKET'])

const grpcNames: Record<number, string> = {
  3: 'INVALID_ARGUMENT',
  4: 'DEADLINE_EXCEEDED',
  5: 'NOT_FOUND',
  6: 'ALREADY_EXISTS',
  7: 'PERMISSION_DENIED',
  9: 'FAILED_PRECONDITION',
  14: 'UNAVAILABLE',
  16: 'UNAUTHENTICATED',
}
const httpNames: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ALREADY_EXISTS',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
}

/**
 * The status of a failed call, whichever way it came: a GoogleError (gRPC code) or, over REST, the
 * HTTP error of the auth client's fetch, whose body is Google's `{"error": {code, message, status}}`.
 */
function statusOf(e: { code?: unknown; status?: unknown; message?: string; details?: string; response?: { status?: number; data?: unknown } }): { name?: string; said: string } {
  type Body = { error?: { status?: string; message?: string } }
  let body: Body | undefined
  const data = e.response?.data
  for (const candidate of [data, e.message]) {
    if (body) break
    if (candidate && typeof candidate === 'object') body = candidate as Body
    else if (typeof candidate === 'string' && candidate.trimStart().startsWith('{')) {
      try {
        body = JSON.parse(candidate) as Body
      } catch {
        // not JSON: keep looking
      }
    }
  }
  const http = typeof e.response?.status === 'number' ? e.response.status : typeof e.status === 'number' ? e.status : typeof e.code === 'number' && e.code >= 100 ? e.code : undefined
  const grpc = typeof e.code === 'number' && e.code < 100 ? grpcNames[e.code] : undefined
  const name = body?.error?.status ?? grpc ?? (http !== undefined ? (httpNames[http] ?? (http >= 500 ? 'UNAVAILABLE' : undefined)) : undefined)
  const said = (body?.error?.message ?? e.details ?? e.message ?? '').replace(/\s+/g, ' ').slice(0, 300)
  return { ...(name ? { name } : {}), said }
}

/**
 * A client failure as a SecretProviderError, built from the status and Google's message only: the
 * library's HTTP errors carry the whole request (the payload included), so none is kept as the cause.
 */
function mapError(error: unknown, what: string, cfg: GcpConfig): SecretProviderError {
  if (error instanceof SecretProviderError) return error
  const e = (error ?? {}) as { code?: unknown; status?: unknown; message?: string; details?: string; response?: { status?: number; data?: unknown }; cause?: { code?: string } }
  const { name, said } = statusOf(e)
  const prefix = `gcp_secret_manager ${what}`
  switch (name) {
    case 'NOT_FOUND':
      return new GcpSecretProviderError('not_found', `${prefix}: not found (${said})`, name)
    case 'FAILED_PRECONDITION':
      // Accessing a destroyed or disabled version.
      if (/DESTROYED|DISABLED/i.test(said)) return new GcpSecretProviderError('not_found', `${prefix}: the version is not enabled (${said})`, name)
      return new GcpSecretProviderError('invalid_config', `${prefix}: rejected (${said})`, name)
    case 'PERMISSION_DENIED':
    case 'UNAUTHENTICATED':
      return new GcpSecretProviderError('access_denied', `${prefix}: permission denied, ${name} (${said})`, name)
    case 'INVALID_ARGUMENT':
    case 'ALREADY_EXISTS':
      return new GcpSecretProviderError('invalid_config', `${prefix}: rejected, ${name} (${said})`, name)
    case 'DEADLINE_EXCEEDED':
      return new GcpSecretProviderError('timeout', `${prefix}: no answer from ${where(cfg)} within ${cfg.timeoutMs} ms`, name)
  }
  const code = typeof e.code === 'string' ? e.code : e.cause?.code
  if (code && networkCodes.has(code)) return new GcpSecretProviderError('unavailable', `${prefix}: cannot reach ${where(cfg)} (${code})`, name)
  if (/Could not load the default credentials|Unable to detect a Project Id/i.test(e.message ?? '')) {
    return new GcpSecretProviderError(
      'access_denied',
      `${prefix}: no application default credentials (set GOOGLE_APPLICATION_CREDENTIALS, run on Google Cloud with a service account, or gcloud auth application-default login)`,
      name,
    )
  }
  return new GcpSecretProviderError('unavailable', `${prefix}: ${name ?? 'failed'}${said ? ` (${said})` : ''}`, name)
}

/** Belt and braces: an error about a write never repeats what was written. */
function scrub(error: unknown, value: string): unknown {
  if (!(error instanceof SecretProviderError) || !value || !error.message.includes(value)) return error
  return new SecretProviderError(error.code, error.message.split(value).join('[value]'))
}
