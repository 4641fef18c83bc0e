import { randomBytes } from 'node:crypto'
import { gzipSync } from 'node:zlib'
import postgres from 'postgres'
import type { Test } from 'tap'
import { PROTOCOL_VERSION } from '@slaw/core/ingest'
import { createTower, type Tower, type TowerOptions } from '@slaw/tower'

export const ADMIN_KEY = 'test-admin-key-0123456789'

export interface Backend {
  name: 'pglite' | 'postgres'
  /** A reason to skip this backend, or undefined. */
  skip: string | undefined
}

/** PGlite always; PostgreSQL when SLAW_TEST_DATABASE_URL is set. */
export const backends: Backend[] = [
  { name: 'pglite', skip: undefined },
  { name: 'postgres', skip: process.env.SLAW_TEST_DATABASE_URL ? undefined : 'SLAW_TEST_DATABASE_URL is not set (e.g. postgres://postgres@127.0.0.1:5432/test)' },
]

/**
 * A fresh PostgreSQL database for one test file, created through the admin URL and dropped in
 * teardown, so parallel test files never collide.
 */
export async function freshDatabase(t: Test): Promise<string> {
  const adminUrl = process.env.SLAW_TEST_DATABASE_URL!
  const name = `slaw_tower_${randomBytes(6).toString('hex')}`
  const admin = postgres(adminUrl, { max: 1, onnotice: () => undefined })
  await admin.unsafe(`create database ${name}`)
  t.teardown(async () => {
    await admin.unsafe(`drop database if exists ${name} with (force)`)
    await admin.end({ timeout: 5 })
  })
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.toString()
}

export interface Harness {
  tower: Tower
  base: string
  /** A JSON call; returns status, headers and the parsed body. */
  call(method: string, path: string, init?: { body?: unknown; raw?: Buffer | string; key?: string | null; headers?: Record<string, string>; gzip?: boolean }): Promise<Reply>
  /** POST to /api/ingest/v1{path}. */
  ingest(path: string, body: unknown, key?: string | null, extra?: { gzip?: boolean; headers?: Record<string, string> }): Promise<Reply>
  /** An admin call (Bearer ADMIN_KEY) to /api/admin{path}. */
  admin(method: string, path: string, body?: unknown): Promise<Reply>
  /** Enrolls a fresh identity on a tower that auto-approves it; returns its key and ids. */
  enrolled(overrides?: Partial<Identity>): Promise<{ apiKey: string; enrollmentId: string; instancePk: string; identity: Identity }>
}

interface Reply {
  status: number
  headers: Headers
  body: any
}

export interface Identity {
  machineId: string
  instanceId: string
  hostname: string
  os: 'linux' | 'darwin' | 'win32'
  slawVersion: string
}

let counter = 0
/** A unique identity per call, so subtests sharing one tower never collide. */
export function identity(overrides: Partial<Identity> = {}): Identity {
  counter += 1
  return {
    machineId: `machine-${process.pid}-${counter}-${randomBytes(4).toString('hex')}`,
    instanceId: 'default',
    hostname: `host-${counter}.test`,
    os: 'linux',
    slawVersion: '0.1.0',
    ...overrides,
  }
}

export const enrollBody = (instance: Identity, extra: Record<string, unknown> = {}) => ({
  protocolVersion: PROTOCOL_VERSION,
  instance,
  capabilities: { reportIssueTitles: true, liveStream: true },
  ...extra,
})

export const heartbeatBody = (extra: Record<string, unknown> = {}) => ({
  protocolVersion: PROTOCOL_VERSION,
  sentAt: new Date().toISOString(),
  status: 'ok',
  uptimeSec: 60,
  counts: { squads: 1, agents: 2, activeRuns: 0, openIssues: 3 },
  spend: { todayCents: 12, monthCents: 345 },
  lastEventCursor: null,
  ...extra,
})

/** Starts a tower on `backend` listening on 127.0.0.1:0, closed in teardown. */
export async function startTower(t: Test, backend: Backend, options: Partial<TowerOptions> = {}): Promise<Harness> {
  const databaseUrl = backend.name === 'postgres' ? await freshDatabase(t) : undefined
  const tower = await createTower({
    adminKey: ADMIN_KEY,
    ...(databaseUrl ? { databaseUrl } : { dataDir: 'memory://' }),
    // Generous defaults so only the rate-limit tests meet a limit.
    rateLimit: { ingest: { max: 100_000, timeWindowMs: 60_000 }, enroll: { max: 100_000, timeWindowMs: 60_000 }, admin: { max: 100_000, timeWindowMs: 60_000 } },
    ...options,
  })
  t.teardown(() => tower.close())
  const base = await tower.listen({ port: 0, host: '127.0.0.1' })

  const call: Harness['call'] = async (method, path, init = {}) => {
    const headers: Record<string, string> = { ...(init.headers ?? {}) }
    let body: Buffer | string | undefined = init.raw
    if (init.body !== undefined) {
      body = JSON.stringify(init.body)
      headers['content-type'] ??= 'application/json'
    }
    if (init.gzip && body !== undefined) {
      body = gzipSync(body)
      headers['content-encoding'] = 'gzip'
    }
    if (init.key) headers.authorization = `Bearer ${init.key}`
    const res = await fetch(base + path, { method, headers, ...(body !== undefined ? { body } : {}) })
    const text = await res.text()
    let parsed: unknown = text
    try {
      parsed = text ? JSON.parse(text) : null
    } catch {
      // Leave non-JSON bodies as text.
    }
    return { status: res.status, headers: res.headers, body: parsed }
  }
  const harness: Harness = {
    tower,
    base,
    call,
    ingest: (path, body, key, extra = {}) => call('POST', `/api/ingest/v1${path}`, { body, key: key ?? null, ...extra }),
    admin: (method, path, body) => call(method, `/api/admin${path}`, { key: ADMIN_KEY, ...(body !== undefined ? { body } : {}) }),
    async enrolled(overrides = {}) {
      const id = identity(overrides)
      const res = await harness.ingest('/enroll', enrollBody(id), null, options.enrollmentSecret ? { headers: { 'x-enrollment-secret': options.enrollmentSecret } } : {})
      if (res.status !== 200) throw new Error(`enroll answered ${res.status}: ${JSON.stringify(res.body)}`)
      const row = await tower.db.selectFrom('tower_instances').select('id').where('machine_id', '=', id.machineId).executeTakeFirstOrThrow()
      return { apiKey: res.body.apiKey, enrollmentId: res.body.enrollmentId, instancePk: row.id, identity: id }
    },
  }
  return harness
}

/**
 * Runs `fn` once per backend as a subtest of `t`, each with its own tower (and, for PostgreSQL, its
 * own database). A backend that is not available is skipped with a plain message.
 */
export function forEachBackend(t: Test, options: Partial<TowerOptions>, fn: (t: Test, h: Harness) => Promise<void>): void {
  for (const backend of backends) {
    t.test(backend.name, backend.skip ? { skip: backend.skip } : {}, async (t) => {
      const h = await startTower(t, backend, options)
      await fn(t, h)
    })
  }
}
