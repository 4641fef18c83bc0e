import type { IncomingMessage, ServerResponse } from 'node:http'
import { readJson, sendJson, startStandIn } from '@slaw/core/testing'

/**
 * A local Google Cloud Secret Manager speaking its REST API (v1, JSON), as the client library's REST
 * transport (`fallback: true`) calls it: secrets create, list and delete; versions add, access,
 * destroy and list; `Authorization: Bearer` checked; errors as `{"error": {code, message, status}}`;
 * enums as numbers when the client asks for `$alt=json;enum-encoding=int`. Resource names in answers
 * carry the project number, as Google's do. Real HTTP on 127.0.0.1.
 */
export interface SecretManagerStandIn {
  /** `http://127.0.0.1:<port>`, for the provider's `apiEndpoint`. */
  endpoint: string
  projectId: string
  projectNumber: string
  /** `ok`, `hang` (never answer) or `forbid` (403 PERMISSION_DENIED to everything). */
  mode: 'ok' | 'hang' | 'forbid'
  /** Every request seen: method, path (with its custom verb), query and bearer token. */
  requests: Array<{ method: string; path: string; query: Record<string, string>; token?: string }>
  close(): Promise<void>
  /** Resolves once every request left hanging has been given up by its client (its socket closed). */
  hangingClosed(): Promise<void>
}

const states = { ENABLED: 1, DISABLED: 2, DESTROYED: 3 } as const
type State = keyof typeof states
interface Version {
  n: number
  data: string | null
  state: State
  createTime: string
}
interface Secret {
  id: string
  labels: Record<string, string>
  replication: unknown
  createTime: string
  versions: Version[]
}

class ApiError extends Error {
  constructor(
    readonly httpStatus: number,
    readonly status: string,
    message: string,
  ) {
    super(message)
  }
}

export async function startSecretManagerStandIn(options: { token: string; projectId?: string; projectNumber?: string }): Promise<SecretManagerStandIn> {
  const projectId = options.projectId ?? 'slaw-test'
  const projectNumber = options.projectNumber ?? '123456789012'
  const secrets = new Map<string, Secret>()
  const requests: SecretManagerStandIn['requests'] = []
  let clock = Date.UTC(2026, 0, 1)
  const now = () => new Date((clock += 1000)).toISOString()

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://secretmanager')
    const body = ((await readJson(req)) ?? {}) as Record<string, any>
    const bearer = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1]
    requests.push({ method: req.method ?? '', path: decodeURIComponent(url.pathname), query: Object.fromEntries(url.searchParams), ...(bearer ? { token: bearer } : {}) })
    if (standIn.mode === 'hang') return server.hold(req)
    const ints = (url.searchParams.get('$alt') ?? '').includes('enum-encoding=int')
    const enumOut = (state: State) => (ints ? states[state] : state)
    const versionJson = (s: Secret, v: Version) => ({ name: `projects/${projectNumber}/secrets/${s.id}/versions/${v.n}`, createTime: v.createTime, state: enumOut(v.state) })
    const secretJson = (s: Secret) => ({ name: `projects/${projectNumber}/secrets/${s.id}`, labels: s.labels, replication: s.replication, createTime: s.createTime })
    try {
      if (bearer !== options.token)
        throw new ApiError(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.')
      const path = decodeURIComponent(url.pathname)
      const m = /^\/v1\/projects\/([^/]+)\/secrets(?:\/([^/:]+))?(?:\/versions(?:\/([^/:]+))?)?(?::([A-Za-z]+))?$/.exec(path)
      if (!m) throw new ApiError(404, 'NOT_FOUND', `Unknown path ${path}`)
      const [, project, secretId, version, verb] = m
      if (project !== projectId && project !== projectNumber) throw new ApiError(403, 'PERMISSION_DENIED', `Permission denied on resource project ${project}.`)
      if (standIn.mode === 'forbid') {
        throw new ApiError(403, 'PERMISSION_DENIED', `Permission 'secretmanager.versions.access' denied for resource 'projects/${project}/secrets/${secretId ?? ''}' (or it may not exist).`)
      }
      const findSecret = (): Secret => {
        const s = secrets.get(secretId!)
        if (!s) throw new ApiError(404, 'NOT_FOUND', `Secret [projects/${projectNumber}/secrets/${secretId}] not found or has no versions.`)
        return s
      }
      const findVersion = (s: Secret): Version => {
        const v = version === 'latest' ? [...s.versions].reverse().find((x) => x.state === 'ENABLED') : s.versions.find((x) => String(x.n) === version)
        if (!v) throw new ApiError(404, 'NOT_FOUND', `Secret Version [projects/${projectNumber}/secrets/${s.id}/versions/${version}] not found.`)
        return v
      }
      const page = <T>(all: T[]) => {
        const size = Math.min(Number(url.searchParams.get('pageSize') ?? 25_000) || 25_000, 25_000)
        const start = url.searchParams.get('pageToken') ? Number(Buffer.from(url.searchParams.get('pageToken')!, 'base64url').toString()) : 0
        if (!Number.isInteger(start) || start < 0) throw new ApiError(400, 'INVALID_ARGUMENT', 'Invalid page token.')
        const next = start + size < all.length ? Buffer.from(String(start + size)).toString('base64url') : undefined
        return { items: all.slice(start, start + size), next, total: all.length }
      }

      // secrets collection: create, list
      if (!secretId && !version && !verb) {
        if (req.method === 'POST') {
          const id = url.searchParams.get('secretId') ?? ''
          if (!/^[A-Za-z0-9_-]{1,255}$/.test(id)) throw new ApiError(400, 'INVALID_ARGUMENT', 'Secret ID must match [a-zA-Z0-9_-]{1,255}.')
          if (secrets.has(id)) throw new ApiError(409, 'ALREADY_EXISTS', `Secret [projects/${projectNumber}/secrets/${id}] already exists.`)
          if (!body.replication) throw new ApiError(400, 'INVALID_ARGUMENT', 'Replication policy is required.')
          const s: Secret = { id, labels: body.labels ?? {}, replication: body.replication, createTime: now(), versions: [] }
          secrets.set(id, s)
          return reply(res, secretJson(s))
        }
        if (req.method === 'GET') {
          const filter = url.searchParams.get('filter') ?? ''
          const needle = /^name:(.*)$/.exec(filter)?.[1]
          if (filter && needle === undefined) throw new ApiError(400, 'INVALID_ARGUMENT', `This stand-in filters by name only, not ${filter}.`)
          const all = [...secrets.values()].filter((s) => !needle || s.id.includes(needle)).sort((a, b) => a.id.localeCompare(b.id))
          const { items, next, total } = page(all)
          return reply(res, { secrets: items.map(secretJson), ...(next ? { nextPageToken: next } : {}), totalSize: total })
        }
      }
      // one secret: delete; add a version
      if (secretId && !version && !path.includes('/versions')) {
        if (req.method === 'DELETE' && !verb) {
          findSecret()
          secrets.delete(secretId)
          return reply(res, {})
        }
        if (req.method === 'POST' && verb === 'addVersion') {
          const s = findSecret()
          const data = body.payload?.data
          if (typeof data !== 'string') throw new ApiError(400, 'INVALID_ARGUMENT', 'Payload data is required.')
          if (Buffer.from(data, 'base64').length > 65_536) throw new ApiError(400, 'INVALID_ARGUMENT', 'Secret payload data cannot be larger than 64KiB.')
          const v: Version = { n: s.versions.length + 1, data, state: 'ENABLED', createTime: now() }
          s.versions.push(v)
          return reply(res, versionJson(s, v))
        }
      }
      // versions collection: list
      if (secretId && path.endsWith('/versions') && req.method === 'GET') {
        const s = findSecret()
        const filter = url.searchParams.get('filter') ?? ''
        const wanted = /^state:\((.+)\)$/.exec(filter)?.[1]?.split(' OR ') ?? (/^state:(\w+)$/.exec(filter)?.[1] ? [/^state:(\w+)$/.exec(filter)![1]!] : undefined)
        const all = [...s.versions].reverse().filter((v) => !wanted || wanted.includes(v.state))
        const { items, next, total } = page(all)
        return reply(res, { versions: items.map((v) => versionJson(s, v)), ...(next ? { nextPageToken: next } : {}), totalSize: total })
      }
      // one version: access, destroy
      if (secretId && version) {
        const s = findSecret()
        const v = findVersion(s)
        if (req.method === 'GET' && verb === 'access') {
          if (v.state !== 'ENABLED' || v.data === null) {
            throw new ApiError(400, 'FAILED_PRECONDITION', `Secret Version [projects/${projectNumber}/secrets/${s.id}/versions/${v.n}] is in ${v.state} state.`)
          }
          return reply(res, { name: `projects/${projectNumber}/secrets/${s.id}/versions/${v.n}`, payload: { data: v.data } })
        }
        if (req.method === 'POST' && verb === 'destroy') {
          if (v.state === 'DESTROYED') throw new ApiError(400, 'FAILED_PRECONDITION', `Secret Version [projects/${projectNumber}/secrets/${s.id}/versions/${v.n}] is already in DESTROYED state.`)
          Object.assign(v, { state: 'DESTROYED', data: null })
          return reply(res, { ...versionJson(s, v), destroyTime: now() })
        }
      }
      throw new ApiError(404, 'NOT_FOUND', `No method ${req.method} ${path}`)
    } catch (error) {
      if (error instanceof ApiError) return fail(res, error)
      throw error
    }
  }

  const server = await startStandIn(handle, { onError: (res, error) => fail(res, new ApiError(500, 'INTERNAL', String(error))) })
  const standIn: SecretManagerStandIn = {
    endpoint: server.url,
    projectId,
    projectNumber,
    mode: 'ok',
    requests,
    hangingClosed: server.hangingClosed,
    close: server.close,
  }
  return standIn
}

const contentType = { 'Content-Type': 'application/json; charset=UTF-8' }

function reply(res: ServerResponse, body: unknown): void {
  sendJson(res, 200, body, contentType)
}

function fail(res: ServerResponse, error: ApiError): void {
  sendJson(res, error.httpStatus, { error: { code: error.httpStatus, message: error.message, status: error.status } }, contentType)
}
