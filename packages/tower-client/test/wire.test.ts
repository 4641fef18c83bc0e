import t from 'tap'
import type { OutboxEntry } from '@slaw/core'
import { Backoff, fillBatch, padCursor, parseRetryAfter, toWire } from '@slaw/tower-client'

const at = '2026-01-02T03:04:05.000Z'
const issue = (id: string, extra: Record<string, unknown> = {}) => ({
  type: 'issue',
  localId: id,
  squadLocalId: 'squad-1',
  projectLocalId: null,
  title: 'Secret roadmap',
  identifier: 'ENG-7',
  status: 'todo',
  assigneeAgentLocalId: null,
  updatedAt: at,
  ...extra,
})
const fact = (id: string) => ({
  type: 'activity_event',
  localId: id,
  squadLocalId: 'squad-1',
  action: 'squad.created',
  entityRef: 'squad:squad-1',
  details: { name: 'x' },
  occurredAt: at,
})
let seq = 0
const row = (kind: 'upsert' | 'fact', payload: Record<string, unknown>): OutboxEntry => ({
  seq: String(++seq),
  kind,
  entityType: String(payload.type),
  entityId: String(payload.localId),
  squadId: 'squad-1',
  payload,
  createdAt: new Date(at),
})

t.test('toWire keeps only the wire fields and honours reportIssueTitles', async (t) => {
  const leaky = issue('i-1', { description: 'BODY', prompt: 'PROMPT', adapterConfig: { token: 'x' } })
  const sent = toWire('upsert', leaky, { reportIssueTitles: true })
  t.ok(!('skip' in sent))
  if ('skip' in sent) return
  t.same(Object.keys(sent.value).sort(), ['assigneeAgentLocalId', 'localId', 'projectLocalId', 'squadLocalId', 'status', 'title', 'type', 'updatedAt'])
  t.equal((sent.value as { title: string }).title, 'Secret roadmap')
  const hidden = toWire('upsert', leaky, { reportIssueTitles: false })
  t.equal('skip' in hidden ? null : (hidden.value as { title: string }).title, 'ENG-7', 'the identifier replaces the title')
  const noIdentifier = toWire('upsert', issue('i-2', { identifier: undefined }), { reportIssueTitles: false })
  t.ok('skip' in noIdentifier, 'without an identifier the title is never sent instead')
  t.ok('skip' in toWire('fact', { ...fact('f-1'), action: 'secret.created' }, { reportIssueTitles: true }), 'non-whitelisted activity is not sent')
  t.ok('skip' in toWire('upsert', { type: 'comment', localId: 'c' }, { reportIssueTitles: true }), 'unknown types are not sent')
  t.ok('skip' in toWire('upsert', issue('i-3', { updatedAt: 'yesterday' }), { reportIssueTitles: true }), 'a malformed row is not sent')
  const long = toWire('upsert', issue('i-4', { title: 'x'.repeat(5000) }), { reportIssueTitles: true })
  t.equal('skip' in long ? 0 : (long.value as { title: string }).title.length, 1000, 'long titles are cut to the wire limit')
})

t.test('fillBatch stops at the limits, collapses repeated upserts, and covers skipped rows', async (t) => {
  const rows = [
    row('upsert', issue('a')),
    row('upsert', issue('a', { status: 'done' })),
    row('fact', fact('f1')),
    row('upsert', { type: 'nope', localId: 'z' }),
    row('upsert', issue('b')),
    row('upsert', issue('c')),
    row('fact', fact('f2')),
  ]
  const b = fillBatch(rows, { reportIssueTitles: true }, { upserts: 2, facts: 5 })
  t.same(
    b.upserts.map((u) => u.localId),
    ['a', 'b'],
    'two upserts: a (once) and b',
  )
  t.equal((b.upserts[0] as { status: string }).status, 'done', 'the later version of a')
  t.same(
    b.facts.map((f) => f.localId),
    ['f1'],
  )
  t.equal(b.rows, 5, 'stopped before c')
  t.equal(b.lastSeq, rows[4]!.seq)
  t.same(
    b.skipped.map((s) => s.seq),
    [rows[3]!.seq],
    'the skipped row is covered by the cursor',
  )

  const facts = Array.from({ length: 5003 }, (_, i) => row('fact', fact(`f-${i}`)))
  const full = fillBatch(facts, { reportIssueTitles: true })
  t.equal(full.facts.length, 5000, 'at most 5000 facts')
  t.equal(full.lastSeq, facts[4999]!.seq)
})

t.test('cursors are zero-padded decimal sequence numbers', async (t) => {
  t.equal(padCursor('42'), '00000000000000000042')
  t.equal(padCursor('42').length, 20)
})

t.test('backoff: 1 s doubling to the cap, with jitter, never sooner than Retry-After', async (t) => {
  const b = new Backoff(1000, 300_000, () => 1)
  t.same([b.next(), b.next(), b.next(), b.next()], [1000, 2000, 4000, 8000])
  for (let i = 0; i < 20; i++) b.next()
  t.equal(b.next(), 300_000, 'capped at 5 min')
  const low = new Backoff(1000, 300_000, () => 0)
  t.equal(low.next(), 500, 'jitter keeps at least half the step')
  t.equal(low.next(10_000), 10_000, 'Retry-After is a floor')
  low.reset()
  t.equal(low.failures, 0)
  t.equal(parseRetryAfter('3'), 3000)
  t.equal(parseRetryAfter(new Date(Date.now() + 5000).toUTCString(), Date.now()) !== undefined, true)
  t.equal(parseRetryAfter('soon'), undefined)
  t.equal(parseRetryAfter(null), undefined)
})

t.test('every nullable key of every wire type is sent, as null when the payload lacks it', async (t) => {
  // The fewest fields each type needs: nothing nullable.
  const bare: Array<['upsert' | 'fact', Record<string, unknown>, string[]]> = [
    ['upsert', { type: 'squad', localId: 's', name: 'S', status: 'active', spentMonthlyCents: 0, updatedAt: at }, ['budgetMonthlyCents']],
    [
      'upsert',
      { type: 'agent', localId: 'a', squadLocalId: 's', name: 'A', role: 'engineer', status: 'idle', adapterType: 'process', spentMonthlyCents: 0, updatedAt: at },
      ['budgetMonthlyCents', 'title', 'reportsToLocalId'],
    ],
    ['upsert', { type: 'squad_skill', localId: 'k', squadLocalId: 's', key: 'k', name: 'K', sourceType: 'local', trustLevel: 'markdown_only', updatedAt: at }, ['description']],
    ['upsert', { type: 'issue', localId: 'i', squadLocalId: 's', title: 'T', status: 'todo', updatedAt: at }, ['projectLocalId', 'assigneeAgentLocalId']],
    [
      'fact',
      {
        type: 'cost_event',
        localId: 'c',
        squadLocalId: 's',
        provider: 'p',
        billingType: 'metered_api',
        model: 'm',
        inputTokens: 1,
        cachedInputTokens: 0,
        outputTokens: 1,
        costCents: 1,
        occurredAt: at,
      },
      ['agentLocalId', 'issueLocalId', 'projectLocalId', 'biller'],
    ],
    ['fact', { type: 'run_event', localId: 'r', agentLocalId: 'a', squadLocalId: 's', status: 'queued', inputTokens: 0, outputTokens: 0, occurredAt: at }, ['startedAt', 'finishedAt']],
    ['fact', { type: 'activity_event', localId: 'e', action: 'squad.created', details: {}, occurredAt: at }, ['squadLocalId', 'entityRef']],
  ]
  for (const [kind, payload, nullable] of bare) {
    const sent = toWire(kind, payload, { reportIssueTitles: true })
    if ('skip' in sent) {
      t.fail(`${String(payload.type)} not sent: ${sent.skip}`)
      continue
    }
    const value = sent.value as Record<string, unknown>
    for (const key of nullable) t.ok(key in value && value[key] === null, `${String(payload.type)}.${key} is sent as null`)
  }
})

t.test("core's own builders write the nullable keys", async (t) => {
  const { costEventFact, outboxUpserts } = await import('@slaw/core')
  const cost = costEventFact({
    id: 'c-1',
    squadId: 's-1',
    agentId: 'a-1',
    issueId: null,
    projectId: null,
    provider: 'anthropic',
    biller: null,
    billingType: 'metered_api',
    model: 'm',
    inputTokens: 1,
    cachedInputTokens: 0,
    outputTokens: 1,
    costCents: 1,
    occurredAt: new Date(at),
    createdAt: new Date(at),
  } as never)
  t.match(cost.payload, { agentLocalId: 'a-1', issueLocalId: null, projectLocalId: null, biller: null })
  for (const key of ['issueLocalId', 'projectLocalId', 'biller']) t.ok(key in cost.payload, `cost_event.${key} present`)
  const agent = outboxUpserts.agent({
    id: 'a-1',
    squadId: 's-1',
    name: 'A',
    role: 'engineer',
    title: null,
    reportsToAgentId: null,
    status: 'idle',
    adapterType: 'process',
    budgetMonthlyCents: null,
    updatedAt: new Date(at),
  } as never)
  t.match(agent.payload, { title: null, reportsToLocalId: null })
  t.ok('title' in agent.payload && 'reportsToLocalId' in agent.payload)
})
