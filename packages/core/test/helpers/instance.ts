import type { Test } from 'tap'
import { createInstance, type AgentAdapter, type InstanceOptions, type SlawInstance } from '@slaw/core'
import { backends, type Backend } from './backends.js'

export const operatorToken = 'slaw_op_test_operator_token_0123456789'
/** One master key for every test instance: PostgreSQL refuses to start without one, and nodes sharing a database must share it. */
export const testMasterKey = '5a'.repeat(32)

/** An adapter that accepts every wake; enough for agents to be created in tests. */
export const testAdapters: AgentAdapter[] = [
  { type: 'process', wake: async () => ({ status: 'succeeded' }) },
  { type: 'http', wake: async () => ({ status: 'succeeded' }) },
]

export interface TestApi {
  instance: SlawInstance
  backend: Backend['name']
  /** inject() with a bearer token (default: the Operator's); returns status and parsed JSON. */
  call(method: string, url: string, body?: unknown, token?: string | null, headers?: Record<string, string>): Promise<{ status: number; body: any; headers: Record<string, unknown> }>
  /** Creates a squad, an agent in it and an agent key; returns their ids and the key's token. */
  seed(name?: string): Promise<{ squadId: string; agentId: string; agentToken: string; prefix: string }>
}

export async function makeApi(instance: SlawInstance, backend: Backend['name']): Promise<TestApi> {
  const api: TestApi = {
    instance,
    backend,
    async call(method, url, body, token = operatorToken, headers = {}) {
      const res = await instance.app.inject({
        method: method as 'GET',
        url,
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
        ...(body !== undefined ? { payload: body as object } : {}),
      })
      let parsed: unknown = res.body
      try {
        parsed = res.body ? JSON.parse(res.body) : undefined
      } catch {
        // not JSON: keep the text
      }
      return { status: res.statusCode, body: parsed, headers: res.headers }
    },
    async seed(name = `Squad ${Math.random().toString(36).slice(2, 8)}`) {
      const squad = await api.call('POST', '/api/squads', { name })
      if (squad.status !== 201) throw new Error(`seed squad: ${squad.status} ${JSON.stringify(squad.body)}`)
      const agent = await api.call('POST', `/api/squads/${squad.body.squad.id}/agents`, { name: 'alice', role: 'software_engineer', adapterType: 'process' })
      if (agent.status !== 201) throw new Error(`seed agent: ${agent.status} ${JSON.stringify(agent.body)}`)
      const key = await api.call('POST', `/api/agents/${agent.body.agent.id}/keys`, { name: 'test' })
      if (key.status !== 201) throw new Error(`seed key: ${key.status} ${JSON.stringify(key.body)}`)
      return { squadId: squad.body.squad.id, agentId: agent.body.agent.id, agentToken: key.body.token, prefix: squad.body.squad.issuePrefix }
    },
  }
  return api
}

/**
 * Runs `fn` once per storage backend (PGlite always, PostgreSQL when SLAW_TEST_DATABASE_URL is set),
 * each with a fresh database and instance that are closed afterwards.
 */
export function eachBackend(
  t: Test,
  name: string,
  fn: (t: Test, api: TestApi) => Promise<void>,
  /** Options, or a function making fresh ones per backend (plugins an instance closes cannot be shared). */
  options: Partial<InstanceOptions> | (() => Partial<InstanceOptions>) = {},
): void {
  for (const backend of backends) {
    t.test(`${name} [${backend.name}]`, backend.skip ? { skip: backend.skip } : {}, async (t) => {
      const { storage, dispose } = await backend.create()
      const instance = await createInstance({
        storage,
        operatorKey: operatorToken,
        masterKey: testMasterKey,
        adapters: testAdapters,
        logger: false,
        ...(typeof options === 'function' ? options() : options),
      })
      t.teardown(async () => {
        await instance.close()
        await dispose()
      })
      await fn(t, await makeApi(instance, backend.name))
    })
  }
}
