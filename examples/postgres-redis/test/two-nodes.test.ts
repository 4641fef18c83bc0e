import t from 'tap'
import { randomBytes } from 'node:crypto'
import type { SlawInstance } from '@slaw/core'
import { createNode } from '../src/main.js'
import { freshDatabase, testDatabaseUrl, testRedisUrl } from './databases.js'

const key = 'slaw_op_two_nodes_operator_key'
const masterKey = randomBytes(32).toString('base64')
const skip = !testDatabaseUrl || !testRedisUrl ? 'two-node suite skipped: set SLAW_TEST_DATABASE_URL and SLAW_TEST_REDIS_URL to run it' : false

/**
 * Two instances (two fastify servers, two connection pools) on the same PostgreSQL and Redis race
 * checkouts over real HTTP: exactly one winner every time.
 */
t.test('checkout races across two nodes have exactly one winner', { skip }, async (t) => {
  const db = await freshDatabase()
  // Both nodes start (and migrate) at once.
  const nodes: SlawInstance[] = await Promise.all([1, 2].map(() => createNode({ databaseUrl: db.url, redisUrl: testRedisUrl!, masterKey, operatorKey: key, poolSize: 8 })))
  t.teardown(async () => {
    for (const n of nodes) await n.close()
    await db.dispose()
  })
  const bases = await Promise.all(nodes.map((n) => n.listen({ port: 0, host: '127.0.0.1' })))
  const call = async (base: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    })
    return { status: res.status, body: (await res.json()) as any }
  }
  const squad = (await call(bases[0]!, 'POST', '/api/squads', { name: 'Race' })).body.squad
  const agents: string[] = []
  for (let i = 0; i < 6; i++)
    agents.push(
      (
        await call(bases[i % 2]!, 'POST', `/api/squads/${squad.id}/agents`, {
          name: `racer-${i}`,
          role: 'general',
          adapterType: 'process',
          adapterConfig: { command: process.execPath, args: ['-e', 'console.log(`woken: ${process.env.SVC_RUN_ID}`)'] },
        })
      ).body.agent.id,
    )

  const rounds = 15
  for (let round = 0; round < rounds; round++) {
    const issue = (await call(bases[round % 2]!, 'POST', `/api/squads/${squad.id}/issues`, { title: `race ${round}` })).body.issue
    const results = await Promise.all(agents.map((agentId, i) => call(bases[i % 2]!, 'POST', `/api/issues/${issue.id}/checkout`, { agentId })))
    const winners = results.filter((r) => r.status === 200)
    const losers = results.filter((r) => r.status === 409 && r.body.code === 'issue_checked_out')
    t.equal(winners.length, 1, `round ${round}: one winner`)
    t.equal(losers.length, agents.length - 1, `round ${round}: everyone else 409 issue_checked_out`)
    const stored = (await call(bases[(round + 1) % 2]!, 'GET', `/api/issues/${issue.id}`)).body.issue
    t.equal(stored.checkoutAgentId, winners[0]!.body.issue.checkoutAgentId, `round ${round}: both nodes agree on the owner`)
  }
})

t.test('nodes share SVC_MASTER_KEY: a secret one node stores, the other resolves; a node without a key, or with another, refuses to start', { skip }, async (t) => {
  const db = await freshDatabase()
  const nodes: SlawInstance[] = await Promise.all([1, 2].map(() => createNode({ databaseUrl: db.url, redisUrl: testRedisUrl!, masterKey, operatorKey: key, poolSize: 4 })))
  t.teardown(async () => {
    for (const n of nodes) await n.close()
    await db.dispose()
  })
  const me = { type: 'system' as const, id: 'two-nodes-test' }
  const squad = await nodes[0]!.services.squads.create(me, { name: 'Shared key' })
  const secret = await nodes[0]!.services.secrets.create(me, squad.id, { name: 'db password', value: 'from-node-one' })
  const resolved = await nodes[1]!.services.secrets.resolve({
    squadId: squad.id,
    secretId: secret.id,
    version: 'latest',
    consumer: { type: 'routine', id: squad.id },
    configPath: 'env.DB',
    actor: me,
    heartbeatRunId: null,
    issueId: null,
  })
  t.equal(resolved, 'from-node-one', "the second node reads the first node's secret")
  await t.rejects(createNode({ databaseUrl: db.url, redisUrl: testRedisUrl!, masterKey: randomBytes(32).toString('base64'), operatorKey: key, poolSize: 1 }), { name: 'MasterKeyMismatchError' })
  await t.rejects(createNode({ databaseUrl: db.url, redisUrl: testRedisUrl!, masterKey: '', operatorKey: key, poolSize: 1 }), /SVC_MASTER_KEY/)
})
