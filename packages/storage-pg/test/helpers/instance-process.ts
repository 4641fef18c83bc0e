import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import postgres from 'postgres'
import { nodeEntry } from '../../../../scripts/node-entry.js'

/** The PostgreSQL server the process suites create their databases on; unset, they are skipped. */
export const adminUrl = process.env.SLAW_TEST_DATABASE_URL
const operator = 'slaw_op_instance_process_test_0001'
const fixture = nodeEntry(new URL('../fixtures/serve-instance.ts', import.meta.url))

/** A database of its own on `adminUrl`; `dispose()` drops it, connections and all. */
export async function freshDatabase(): Promise<{ url: string; dispose(): Promise<void> }> {
  const name = `slaw_t_${randomBytes(6).toString('hex')}`
  const admin = postgres(adminUrl!, { max: 1, onnotice: () => undefined })
  await admin.unsafe(`create database ${name}`)
  await admin.end()
  const url = new URL(adminUrl!)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async dispose() {
      const a = postgres(adminUrl!, { max: 1, onnotice: () => undefined })
      await a.unsafe(`drop database if exists ${name} with (force)`)
      await a.end()
    },
  }
}

/** A slaw instance in a process of its own (so a test can see it crash, or run two nodes). */
export interface InstanceProcess {
  child: ChildProcess
  base: string
  /** All it printed so far. */
  output(): string
  /** A call to its API with the operator key. */
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>
}

/** Starts the fixture on `databaseUrl`; resolves once it listens. */
export function serveInstance(databaseUrl: string): Promise<InstanceProcess> {
  const child = spawn(process.execPath, fixture, {
    env: { ...process.env, DATABASE_URL: databaseUrl, SVC_OPERATOR_KEY: operator, POOL_MAX: '10' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (c) => (out += c))
    child.stdout!.on('data', (c) => {
      out += c
      const m = /listening (\S+)/.exec(out)
      if (m) resolve({ child, base: m[1]!, output: () => out, call: (method, path, body) => call(m[1]!, method, path, body) })
    })
    child.once('exit', (code) => reject(new Error(`instance exited (${code}) before listening: ${out}`)))
  })
}

async function call(base: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${operator}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  })
  return { status: res.status, body: (await res.json()) as any }
}
