import t, { type Test } from 'tap'
import { sql } from 'kysely'
import { type CostEntry, type Storage, uuidv7 } from '@slaw/core'
import { pgStorage } from '@slaw/storage-pg'
import { openPglite, pgliteStorage } from '@slaw/storage-pg/pglite'
import type { KyselyStorage } from '../src/kysely-storage.js'
import { migrations } from '../src/migrations/index.js'
import { freshDatabase, testDatabaseUrl } from '../../core/test/helpers/backends.js'

// cost_day_rollups (migration 0015) is written as deltas by the cost-event statement and rebuilt
// from the events by the migration's backfill: both must give the same rows, and the write must
// stay one statement per batch.

type Db = KyselyStorage['db']

const backfill = (migrations['0015-cost-day-rollups'] as unknown as { statements: string[] }).statements.find((s) => s.trimStart().startsWith('insert'))!

const rollupRows = async (db: Db) =>
  (
    await sql<Record<string, unknown>>`select squad_id::text, to_char(day::timestamp, 'YYYY-MM-DD') as day, provider, model, billing_type, cost_cents::text, input_tokens::text,
      cached_input_tokens::text, output_tokens::text, subscription_tokens::text, events::text, cache_write_tokens::text, unpriced_tokens::text
      from cost_day_rollups order by 1, 2, 3, 4, 5`.execute(db)
  ).rows

/** Events over two months for two squads: several models, both billing types, unpriced ones, times next to midnight. */
async function record(t: Test, s: Storage): Promise<number> {
  const squads: Array<{ squadId: string; agentId: string }> = []
  for (const slug of ['one', 'two']) {
    const squad = await s.squads.insert({ id: uuidv7(), name: slug, slug: `${slug}-${uuidv7().slice(-6)}`, issuePrefix: slug.toUpperCase() })
    const agent = await s.agents.insert({ id: uuidv7(), squadId: squad.id, name: 'a', role: 'general', title: null, adapterType: 'process', reportsToAgentId: null, prompt: null, desiredSkills: [] })
    squads.push({ squadId: squad.id, agentId: agent.id })
  }
  const models = [
    ['openai', 'gpt-5'],
    ['anthropic', 'claude-sonnet'],
    ['anthropic', 'claude-haiku'],
  ] as const
  let n = 0
  const entry = (i: number): CostEntry => {
    const { squadId, agentId } = squads[i % 2]!
    const [provider, model] = models[i % 3]!
    const unpriced = i % 7 === 0
    const costCents = unpriced || i % 5 === 0 ? 0 : 1 + (i % 13)
    // Days 0..39 from October 25th, at midnight, a millisecond before it, or mid-day.
    const at = Date.UTC(2026, 9, 25 + (i % 40)) + [0, -1, 12 * 3_600_000 + i][i % 3]!
    n++
    return {
      event: {
        id: uuidv7(),
        squadId,
        agentId,
        issueId: null,
        projectId: null,
        provider,
        biller: null,
        billingType: i % 5 === 0 ? 'subscription_included' : 'metered_api',
        model,
        inputTokens: 100 + i,
        cachedInputTokens: i % 11,
        cacheWriteTokens: i % 3,
        outputTokens: 10 + (i % 17),
        costCents,
        costStatus: unpriced ? 'unpriced' : 'reported',
        billingCode: null,
        occurredAt: new Date(at),
      },
      keys: [{ scope: 'squad', key: '', period: new Date(at).toISOString().slice(0, 7) }],
      delta: { costCents, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, subscriptionTokens: 0, events: 1, cacheWriteTokens: 0, unpricedTokens: 0 },
    }
  }
  // Batches of 1 to 40 events, in transactions and (when nothing has a budget) without.
  let i = 0
  for (const size of [1, 40, 7, 25, 3, 40, 1, 13]) {
    const batch = Array.from({ length: size }, () => entry(i++))
    if (i % 2 && s.costs.recordUnbudgeted) t.ok(await s.costs.recordUnbudgeted(batch), `unbudgeted batch of ${size}`)
    else await s.transaction((tx) => tx.costs.recordMany(batch))
  }
  return n
}

async function backfillMatchesLive(t: Test, s: Storage & { db: Db }) {
  await s.migrate()
  const n = await record(t, s)
  const live = await rollupRows(s.db)
  t.equal(
    live.reduce((sum, r) => sum + Number(r.events), 0),
    n,
    'every event counted once',
  )
  t.ok(live.length > 40, `${live.length} rows`)
  // The backfill on the same events, in a transaction that is rolled back.
  let rebuilt: Array<Record<string, unknown>> = []
  await s.db
    .transaction()
    .execute(async (trx) => {
      await sql`delete from cost_day_rollups`.execute(trx)
      await sql.raw(backfill).execute(trx)
      rebuilt = await rollupRows(trx)
      throw new Error('roll back')
    })
    .catch((e: Error) => {
      if (e.message !== 'roll back') throw e
    })
  t.same(rebuilt, live, 'the backfill gives the rows the writes left')
  t.same(await rollupRows(s.db), live, 'rolled back')
}

t.test('PGlite: the backfill equals the live rollup', async (t) => {
  const s = await pgliteStorage({ dataDir: 'memory://' })
  t.teardown(() => s.close())
  await backfillMatchesLive(t, s)
})

t.test('PostgreSQL: the backfill equals the live rollup', testDatabaseUrl ? {} : { skip: 'set SLAW_TEST_DATABASE_URL to run it' }, async (t) => {
  const db = await freshDatabase({ migrated: true })
  const s = pgStorage({ url: db.url, max: 4 })
  t.teardown(async () => {
    await s.close()
    await db.dispose()
  })
  await backfillMatchesLive(t, s)
})

t.test('a batch is still one statement, whatever its size', async (t) => {
  const pg = await openPglite({ dataDir: 'memory://' })
  t.teardown(() => pg.close())
  const s = await pgliteStorage({ client: pg })
  await s.migrate()
  const squad = await s.squads.insert({ id: uuidv7(), name: 'c', slug: 'c', issuePrefix: 'CNT' })
  const agent = await s.agents.insert({ id: uuidv7(), squadId: squad.id, name: 'a', role: 'general', title: null, adapterType: 'process', reportsToAgentId: null, prompt: null, desiredSkills: [] })
  const seen: string[] = []
  const query = pg.query.bind(pg)
  pg.query = ((text: string, ...rest: unknown[]) => {
    seen.push(text)
    return (query as (...args: unknown[]) => unknown)(text, ...rest)
  }) as typeof pg.query
  const batch = (size: number): CostEntry[] =>
    Array.from({ length: size }, (_, i) => ({
      event: {
        id: uuidv7(),
        squadId: squad.id,
        agentId: agent.id,
        issueId: null,
        projectId: null,
        provider: 'openai',
        biller: null,
        billingType: 'metered_api',
        model: `m${i % 4}`,
        inputTokens: 1,
        cachedInputTokens: 0,
        cacheWriteTokens: 0,
        outputTokens: 1,
        costCents: 1,
        costStatus: 'reported',
        billingCode: null,
        occurredAt: new Date(Date.UTC(2026, 10, 1 + (i % 3))),
      },
      keys: [{ scope: 'squad', key: '', period: '2026-11' }],
      delta: { costCents: 1, inputTokens: 1, cachedInputTokens: 0, outputTokens: 1, subscriptionTokens: 0, events: 1, cacheWriteTokens: 0, unpricedTokens: 0 },
    }))
  for (const size of [1, 50]) {
    seen.length = 0
    t.ok(await s.costs.recordUnbudgeted!(batch(size)))
    t.equal(seen.length, 1, `recordUnbudgeted, ${size} events: one statement`)
    seen.length = 0
    await s.costs.recordMany(batch(size))
    t.equal(seen.length, 1, `recordMany, ${size} events: one statement`)
  }
  t.equal(
    (await s.costs.dailyTotals(squad.id, new Date('2026-11-01T00:00:00Z'), new Date('2026-12-01T00:00:00Z'))).reduce((n, d) => n + d.events, 0),
    102,
  )
})
