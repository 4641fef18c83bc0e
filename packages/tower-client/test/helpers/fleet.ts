import http from 'node:http'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { createInstance, type SlawInstance, type Storage, type TowerClient } from '@slaw/core'
import { startStandIn } from '@slaw/core/testing'
import { pgliteStorage } from '@slaw/storage-pg/pglite'
import { pooledPgliteStorage } from '../../../core/test/helpers/backends.js'
import { createTower, type Tower, type TowerOptions } from '@slaw/tower'
import { towerClient, type TowerClientOptions } from '@slaw/tower-client'

const operatorToken = 'slaw_op_fleet_test_operator_token_0123456789'
const adminKey = 'tower-admin-key-for-tests'

/** Short cadences so a test sees several cycles in a second or two. */
const fast: TowerClientOptions = {
  heartbeatSec: 0.3,
  syncSec: 0.1,
  retryBaseMs: 50,
  retryMaxMs: 400,
  refreshMs: 100,
  leaseMs: 3000,
  requestTimeoutMs: 3000,
  limitUsageTtlMs: 10,
  livePollMs: 50,
  livePingMs: 200,
  closeGraceMs: 500,
}

export async function tempDir(t: Test, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `slaw-${prefix}-`))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

export interface TestTower {
  tower: Tower
  url: string
  port: number
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>
  /** The tower's record of the one instance with this instanceId. */
  instance(instanceId: string): Promise<any>
  /** Everything of one synced collection (e.g. `issues`, `cost-events`) for an instance. */
  synced(instanceId: string, path: string): Promise<any[]>
  close(): Promise<void>
}

/** A real tower over HTTP (PGlite in memory unless `dataDir` is given), closed at teardown. */
export async function startTower(t: Test, options: Partial<TowerOptions> & { port?: number } = {}): Promise<TestTower> {
  const { port: wanted, ...rest } = options
  const tower = await createTower({ dataDir: 'memory://', adminKey, autoApprove: true, rateLimit: false, pollIntervalSec: 1, ...rest })
  const url = await tower.listen({ port: wanted ?? 0, host: '127.0.0.1' })
  const port = Number(new URL(url).port)
  let closed = false
  const close = async () => {
    if (closed) return
    closed = true
    await tower.close()
  }
  t.teardown(close)
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}/api/admin${path}`, {
      method,
      headers: { authorization: `Bearer ${adminKey}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : undefined }
  }
  const instance = async (instanceId: string) => {
    const res = await admin('GET', '/instances?limit=500')
    return res.body.items.find((i: any) => i.instanceId === instanceId)
  }
  const synced = async (instanceId: string, path: string) => {
    const i = await instance(instanceId)
    if (!i) return []
    const out: any[] = []
    let cursor: string | null = null
    do {
      const res: { status: number; body: any } = await admin('GET', `/instances/${i.id}/${path}?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
      if (res.status !== 200) throw new Error(`synced ${path}: ${res.status} ${JSON.stringify(res.body)}`)
      out.push(...res.body.items.map((x: any) => x.data))
      cursor = res.body.nextCursor
    } while (cursor)
    return out
  }
  return { tower, url, port, admin, instance, synced, close }
}

export interface TestInstance {
  instance: SlawInstance
  client: TowerClient
  storage: Storage
  call(method: string, url: string, body?: unknown, token?: string | null): Promise<{ status: number; body: any }>
  status(): Promise<any>
  close(): Promise<void>
}

/** An instance with a tower client, on PGlite (in memory, or in `dataDir` to survive a restart). */
export async function startInstance(t: Test, client: TowerClientOptions, options: { dataDir?: string; storage?: Storage } = {}): Promise<TestInstance> {
  // In memory: a pooled PGlite (emptied for the next test when this one closes).
  const pooled = !options.storage && !options.dataDir ? await pooledPgliteStorage() : undefined
  const storage = options.storage ?? pooled?.storage ?? (await pgliteStorage({ dataDir: options.dataDir! }))
  const tower = towerClient({ ...fast, ...client })
  // One master key for every node: PostgreSQL refuses to start without one, and nodes sharing a database must share it.
  const instance = await createInstance({
    storage,
    operatorKey: operatorToken,
    masterKey: '5a'.repeat(32),
    logger: false,
    tower,
    adapters: [{ type: 'process', wake: async () => ({ status: 'succeeded' }) }],
  })
  await instance.ready()
  let closed = false
  const close = async () => {
    if (closed) return
    closed = true
    await instance.close()
    await pooled?.dispose()
  }
  t.teardown(close)
  const call = async (method: string, url: string, body?: unknown, token: string | null = operatorToken) => {
    const res = await instance.app.inject({
      method: method as 'GET',
      url,
      headers: token ? { authorization: `Bearer ${token}` } : {},
      ...(body !== undefined ? { payload: body as object } : {}),
    })
    return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined }
  }
  return { instance, client: tower, storage, call, status: async () => (await call('GET', '/api/tower')).body.tower, close }
}

/** Polls `fn` until it returns a truthy value, or fails after `timeoutMs`. */
type Truthy<T> = Exclude<T, false | null | undefined | 0 | ''>

export async function eventually<T>(fn: () => Promise<T>, timeoutMs = 10_000, what = 'condition'): Promise<Truthy<T>> {
  const until = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const v = await fn()
      if (v) return v as Truthy<T>
      last = v
    } catch (err) {
      last = err
    }
    if (Date.now() > until) throw new Error(`timed out waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

export async function seed(inst: TestInstance, name = `Squad ${Math.random().toString(36).slice(2, 7)}`): Promise<{ squadId: string; agentId: string; prefix: string }> {
  const squad = await inst.call('POST', '/api/squads', { name })
  if (squad.status !== 201) throw new Error(`seed squad: ${squad.status} ${JSON.stringify(squad.body)}`)
  const agent = await inst.call('POST', `/api/squads/${squad.body.squad.id}/agents`, { name: 'alice', role: 'software_engineer', adapterType: 'process' })
  if (agent.status !== 201) throw new Error(`seed agent: ${agent.status} ${JSON.stringify(agent.body)}`)
  return { squadId: squad.body.squad.id, agentId: agent.body.agent.id, prefix: squad.body.squad.issuePrefix }
}

/**
 * A proxy in front of the tower that can fail or swallow requests: `fail(...)` answers matching
 * requests itself (after letting `skip` of them through); `dropResponses(n)` forwards the next n to
 * the tower and then cuts the connection before the answer reaches the instance (an
 * acknowledgement lost on the way). Every request is logged with its time and the tower's answer.
 */
export interface FaultProxy {
  url: string
  fail(rule: { path: string; times: number; status: number; skip?: number; headers?: Record<string, string>; code?: string }): void
  dropResponses(path: string, n: number): void
  /** Changes the tower's JSON answer to the next n matching requests (a tower newer than this client). */
  rewrite(path: string, n: number, fn: (body: any) => any): void
  /** Forgets every rule. */
  clear(): void
  /** Requests seen per path. */
  seen: Map<string, number>
  /** Every request: path, time, what happened, and the tower's JSON answer when it was forwarded. */
  log: Array<{ path: string; at: number; outcome: 'failed' | 'dropped' | 'forwarded'; status: number; body?: any }>
  count(path: string): number
  close(): Promise<void>
}

export async function faultProxy(t: Test, target: () => string): Promise<FaultProxy> {
  type Rule = { path: string; left: number; skip: number; status: number; headers: Record<string, string>; code: string | undefined }
  let failures: Rule[] = []
  let drops: Array<{ path: string; left: number }> = []
  let rewrites: Array<{ path: string; left: number; fn: (body: any) => any }> = []
  const seen = new Map<string, number>()
  const log: FaultProxy['log'] = []
  const takeFailure = (path: string) => {
    const rule = failures.find((r) => r.left > 0 && path.endsWith(r.path))
    if (!rule) return undefined
    if (rule.skip > 0) {
      rule.skip--
      return undefined
    }
    rule.left--
    return rule
  }
  const takeDrop = (path: string) => {
    const rule = drops.find((r) => r.left > 0 && path.endsWith(r.path))
    if (rule) rule.left--
    return rule
  }
  const server = await startStandIn((req, res) => {
    const path = (req.url ?? '').split('?')[0]!
    seen.set(path, (seen.get(path) ?? 0) + 1)
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const failure = takeFailure(path)
      if (failure) {
        log.push({ path, at: Date.now(), outcome: 'failed', status: failure.status })
        res.writeHead(failure.status, { 'content-type': 'application/json', ...failure.headers })
        res.end(JSON.stringify({ error: 'injected failure', code: failure.code ?? (failure.status === 429 ? 'rate_limited' : 'internal_error') }))
        return
      }
      const drop = takeDrop(path)
      const rewrite = rewrites.find((r) => r.left > 0 && path.endsWith(r.path))
      if (rewrite) rewrite.left--
      const headers: Record<string, string> = {}
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && k !== 'host' && k !== 'connection') headers[k] = v
      const upstream = http.request(`${target()}${req.url}`, { method: req.method, headers }, (up) => {
        const body: Buffer[] = []
        up.on('data', (c: Buffer) => body.push(c))
        up.on('end', () => {
          let raw = Buffer.concat(body)
          let parsed: unknown
          try {
            parsed = JSON.parse(raw.toString())
          } catch {
            parsed = undefined
          }
          if (rewrite && parsed !== undefined) {
            parsed = rewrite.fn(parsed)
            raw = Buffer.from(JSON.stringify(parsed))
          }
          log.push({ path, at: Date.now(), outcome: drop ? 'dropped' : 'forwarded', status: up.statusCode ?? 0, body: parsed })
          if (drop) {
            // The tower did the work; the instance never hears about it.
            req.socket.destroy()
            return
          }
          const out: Record<string, string> = {}
          for (const [k, v] of Object.entries(up.headers)) if (typeof v === 'string' && k !== 'connection' && k !== 'transfer-encoding' && k !== 'content-length') out[k] = v
          res.writeHead(up.statusCode ?? 502, out)
          res.end(raw)
        })
      })
      upstream.on('error', () => {
        req.socket.destroy()
      })
      upstream.end(Buffer.concat(chunks))
    })
  })
  const { close } = server
  t.teardown(close)
  return {
    url: server.url,
    fail: (r) => failures.push({ path: r.path, left: r.times, skip: r.skip ?? 0, status: r.status, headers: r.headers ?? {}, code: r.code }),
    dropResponses: (path, n) => drops.push({ path, left: n }),
    rewrite: (path, n, fn) => rewrites.push({ path, left: n, fn }),
    clear: () => {
      failures = []
      drops = []
      rewrites = []
    },
    seen,
    log,
    count: (path) => [...seen.entries()].filter(([p]) => p.endsWith(path)).reduce((a, [, n]) => a + n, 0),
    close,
  }
}
