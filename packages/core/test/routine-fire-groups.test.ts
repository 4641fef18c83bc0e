import { createHmac } from 'node:crypto'
import t from 'tap'
import type { SlawInstance } from '@slaw/core'
import { backends } from './helpers/backends.js'
import { isError } from './helpers/fixtures.js'
import { eachBackend, makeApi } from './helpers/instance.js'
import { addTrigger, fire, routineWithAssignee, runsOf, twoPgNodes } from './helpers/routines.js'

// Public fires submitted at the same moment commit in groups (docs/routines.md, "Firing in
// groups"). These fires are made through the service in one event-loop turn, so they land in one
// group; the counted transactions show they did not fall back to committing one by one.

const clock = { now: new Date('2030-01-15T10:00:00Z') }
const unix = () => Math.floor(clock.now.getTime() / 1000)
const hmac = (secret: string, data: string) => createHmac('sha256', secret).update(data).digest('hex')
const opts = { now: () => clock.now }

const publicIdOf = (fireUrl: string) => fireUrl.split('/')[4]!

/** Fires at once, in this turn; each answer settled. */
function burst(instance: SlawInstance, fireUrl: string, requests: Array<{ body: string; headers: Record<string, string> }>) {
  return Promise.allSettled(
    requests.map((r) =>
      instance.services.routines.fire(publicIdOf(fireUrl), {
        headers: { 'content-type': 'application/json', ...r.headers },
        rawBody: Buffer.from(r.body),
        contentType: 'application/json',
      }),
    ),
  )
}

/** Counts `storage.transaction` calls (nested ones included) while `fn` runs. */
async function countTransactions<T>(instance: SlawInstance, fn: () => Promise<T>): Promise<{ result: T; transactions: number }> {
  const storage = instance.storage
  const original = storage.transaction
  let transactions = 0
  storage.transaction = ((f: never) => {
    transactions++
    return original.call(storage, f)
  }) as typeof original
  try {
    return { result: await fn(), transactions }
  } finally {
    storage.transaction = original
  }
}

const fulfilled = <T>(rs: Array<PromiseSettledResult<T>>) => rs.map((r) => (r.status === 'fulfilled' ? r.value : undefined))

eachBackend(
  t,
  'fire groups: one signed request fired eight times at once is one run',
  async (t, api) => {
    const { routine } = await routineWithAssignee(api)
    const hook = await addTrigger(api, routine.id, { kind: 'webhook', signingMode: 'hmac_sha256' })
    const body = JSON.stringify({ service: 'search' })
    const headers = { 'x-slaw-timestamp': String(unix()), 'x-slaw-signature': `sha256=${hmac(hook.secret!, `${unix()}.${body}`)}` }
    // Warm: the trigger is read once and cached, so the burst below is one group.
    t.equal(
      (
        await fire(api, hook.trigger.fireUrl, JSON.stringify({ service: 'warm' }), {
          'x-slaw-timestamp': String(unix()),
          'x-slaw-signature': `sha256=${hmac(hook.secret!, `${unix()}.{"service":"warm"}`)}`,
        })
      ).status,
      201,
    )

    const { result, transactions } = await countTransactions(api.instance, () =>
      burst(
        api.instance,
        hook.trigger.fireUrl,
        Array.from({ length: 8 }, () => ({ body, headers })),
      ),
    )
    const answers = fulfilled(result)
    t.ok(
      answers.every((a) => a),
      'every fire answered',
      { result },
    )
    t.equal(answers.filter((a) => a!.created).length, 1, 'one created')
    t.equal(new Set(answers.map((a) => a!.run.id)).size, 1, 'all answer the same run')
    t.ok(transactions < 8, `committed as a group (${transactions} transactions for 8 fires)`)
    const runs = await runsOf(api, routine.id)
    t.equal(runs.length, 2, 'the warm-up run and one more')

    // Over HTTP, spread over whatever groups they fall into: still the same run.
    const again = await Promise.all(Array.from({ length: 6 }, () => fire(api, hook.trigger.fireUrl, body, headers)))
    t.same(
      again.map((a) => a.status),
      [200, 200, 200, 200, 200, 200],
    )
    t.ok(again.every((a) => a.body.run.id === answers[0]!.run.id))

    // Bearer: the Idempotency-Key header is the key; repeats inside one group share the first's run.
    const bearer = await addTrigger(api, routine.id, { kind: 'api' })
    const auth = { authorization: `Bearer ${bearer.secret}` }
    t.equal((await fire(api, bearer.trigger.fireUrl, '{}', auth)).status, 201, 'warm')
    const keyed = fulfilled(
      await burst(api.instance, bearer.trigger.fireUrl, [
        { body: '{}', headers: { ...auth, 'idempotency-key': 'a' } },
        { body: '{}', headers: { ...auth, 'idempotency-key': 'b' } },
        { body: '{}', headers: { ...auth, 'idempotency-key': 'a' } },
        { body: '{}', headers: auth },
        { body: '{}', headers: { ...auth, 'idempotency-key': 'b' } },
      ]),
    )
    t.same(
      keyed.map((k) => k!.created),
      [true, true, false, true, false],
    )
    t.equal(keyed[2]!.run.id, keyed[0]!.run.id)
    t.equal(keyed[4]!.run.id, keyed[1]!.run.id)
    t.equal(keyed[2]!.run.status, 'issue_created', 'a repeat answers the finished run')
    t.equal(new Set(keyed.map((k) => k!.run.issueId)).size, 3, 'three issues')
    t.equal((await runsOf(api, routine.id)).length, 6, 'three runs more')
  },
  opts,
)

eachBackend(
  t,
  'fire groups: skip_if_active and coalesce_if_active hold under simultaneous fires',
  async (t, api) => {
    for (const policy of ['skip_if_active', 'coalesce_if_active'] as const) {
      const { routine } = await routineWithAssignee(api, { concurrencyPolicy: policy })
      const hook = await addTrigger(api, routine.id, { kind: 'webhook' })
      const auth = { authorization: `Bearer ${hook.secret}` }
      const linked = policy === 'skip_if_active' ? 'skipped' : 'coalesced'
      t.equal((await fire(api, hook.trigger.fireUrl, '{}', auth)).status, 201, 'warm')
      const first = (await runsOf(api, routine.id))[0]
      // An active run: every fire of the burst links to it.
      const linkedAll = fulfilled(
        await burst(
          api.instance,
          hook.trigger.fireUrl,
          Array.from({ length: 6 }, () => ({ body: '{}', headers: auth })),
        ),
      )
      t.ok(
        linkedAll.every((a) => a?.run.status === linked && a.run.linkedRunId === first.id && a.run.issueId === null),
        `${policy}: all linked to the active run`,
      )
      // The active run's issue done: exactly one fire of the burst makes the next issue.
      t.equal((await api.call('PATCH', `/api/issues/${first.issueId}`, { status: 'done' })).status, 200)
      const next = fulfilled(
        await burst(
          api.instance,
          hook.trigger.fireUrl,
          Array.from({ length: 6 }, () => ({ body: '{}', headers: auth })),
        ),
      )
      const made = next.filter((a) => a?.run.status === 'issue_created')
      t.equal(made.length, 1, `${policy}: one issue`)
      t.ok(
        next.every((a) => a === made[0] || (a?.run.status === linked && a.run.linkedRunId === made[0]!.run.id)),
        `${policy}: the others linked to it`,
      )
      // Over HTTP too, whatever groups they fall into.
      const http = await Promise.all(Array.from({ length: 6 }, () => fire(api, hook.trigger.fireUrl, '{}', auth)))
      t.ok(
        http.every((a) => a.status === 201 && a.body.run.status === linked),
        `${policy}: still active, all linked`,
      )
    }

    // One group with an always_enqueue routine and a skipping one of the same squad: each keeps its policy.
    const always = await routineWithAssignee(api)
    const skip = await api.call('POST', `/api/squads/${always.squadId}/routines`, { title: 'Skip', assigneeAgentId: always.agentId, concurrencyPolicy: 'skip_if_active' })
    const a = await addTrigger(api, always.routine.id, { kind: 'webhook' })
    const s = await addTrigger(api, skip.body.routine.id, { kind: 'webhook' })
    await fire(api, a.trigger.fireUrl, '{}', { authorization: `Bearer ${a.secret}` })
    await fire(api, s.trigger.fireUrl, '{}', { authorization: `Bearer ${s.secret}` })
    const fires = Array.from({ length: 4 }, () => [
      api.instance.services.routines.fire(publicIdOf(a.trigger.fireUrl), { headers: { authorization: `Bearer ${a.secret}` }, rawBody: Buffer.alloc(0), contentType: undefined }),
      api.instance.services.routines.fire(publicIdOf(s.trigger.fireUrl), { headers: { authorization: `Bearer ${s.secret}` }, rawBody: Buffer.alloc(0), contentType: undefined }),
    ]).flat()
    const mixed = await Promise.all(fires)
    t.same(
      mixed.map((m) => m.run.status),
      ['issue_created', 'skipped', 'issue_created', 'skipped', 'issue_created', 'skipped', 'issue_created', 'skipped'],
    )
  },
  opts,
)

eachBackend(
  t,
  'fire groups: a refused fire fails alone; the others of its group commit',
  async (t, api) => {
    const { routine } = await routineWithAssignee(api)
    const hook = await addTrigger(api, routine.id, { kind: 'webhook' })
    const auth = { authorization: `Bearer ${hook.secret}` }
    t.equal((await fire(api, hook.trigger.fireUrl, '{}', auth)).status, 201, 'warm')
    const bodies = ['{"service":"a"}', '{"service":42}', '{"service":"b"}', `{"service":"${'x'.repeat(300)}"}`, '{"service":"c"}']
    const { result, transactions } = await countTransactions(api.instance, () =>
      burst(
        api.instance,
        hook.trigger.fireUrl,
        bodies.map((body) => ({ body, headers: auth })),
      ),
    )
    t.same(
      result.map((r) => r.status),
      ['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled'],
    )
    t.match((result[1] as PromiseRejectedResult).reason, { code: 'invalid_payload' }, 'wrong variable type')
    t.match((result[3] as PromiseRejectedResult).reason, { code: 'invalid_payload' }, 'title too long')
    t.ok(transactions <= 4, `one group (${transactions} transactions)`)
    const titles = await Promise.all(
      fulfilled(result)
        .filter((r) => r)
        .map(async (r) => (await api.call('GET', `/api/issues/${r!.run.issueId}`)).body.issue.title),
    )
    t.same(titles, ['Deploy a', 'Deploy b', 'Deploy c'])
    t.equal((await runsOf(api, routine.id)).length, 4, 'nothing of the refused fires was written')
  },
  opts,
)

eachBackend(
  t,
  'fire groups: a cached trigger gives way to the row (disabled, rotated, window, policy changed)',
  async (t, api) => {
    const { routine } = await routineWithAssignee(api)
    const hook = await addTrigger(api, routine.id, { kind: 'webhook' })
    const url = hook.trigger.fireUrl
    t.equal((await fire(api, url, '{}', { authorization: `Bearer ${hook.secret}` })).status, 201, 'cached now')
    // Written as another node would: straight to storage, this node hears nothing of it.
    await api.instance.storage.routines.updateTrigger(hook.trigger.id, { enabled: false })
    isError(t, await fire(api, url, '{}', { authorization: `Bearer ${hook.secret}` }), 404, 'not_found', 'disabled elsewhere')
    await api.instance.storage.routines.updateTrigger(hook.trigger.id, { enabled: true })
    t.equal((await fire(api, url, '{}', { authorization: `Bearer ${hook.secret}` })).status, 201, 're-enabled')
    const rotated = (await api.call('POST', `/api/routine-triggers/${hook.trigger.id}/rotate-secret`)).body.secret
    isError(t, await fire(api, url, '{}', { authorization: `Bearer ${hook.secret}` }), 401, 'unauthorized', 'old secret')
    t.equal((await fire(api, url, '{}', { authorization: `Bearer ${rotated}` })).status, 201, 'new secret')

    // The replay window shrinks: a timestamp the cached window allowed is refused.
    const signedHook = await addTrigger(api, routine.id, { kind: 'webhook', signingMode: 'hmac_sha256', replayWindowSec: 300 })
    const signed = (ts: number, body: string) => ({ 'x-slaw-timestamp': String(ts), 'x-slaw-signature': `sha256=${hmac(signedHook.secret!, `${ts}.${body}`)}` })
    t.equal((await fire(api, signedHook.trigger.fireUrl, '{"n":1}', signed(unix(), '{"n":1}'))).status, 201)
    await api.instance.storage.routines.updateTrigger(signedHook.trigger.id, { replayWindowSec: 60 })
    isError(t, await fire(api, signedHook.trigger.fireUrl, '{"n":2}', signed(unix() - 120, '{"n":2}')), 401, 'unauthorized', 'outside the new window')

    // The policy changes after the trigger was cached: the next fires ask "is a run active?".
    t.equal((await api.call('PATCH', `/api/routines/${routine.id}`, { concurrencyPolicy: 'skip_if_active' })).status, 200)
    const answers = fulfilled(
      await burst(
        api.instance,
        url,
        Array.from({ length: 4 }, () => ({ body: '{}', headers: { authorization: `Bearer ${rotated}` } })),
      ),
    )
    t.ok(
      answers.every((a) => a?.run.status === 'skipped'),
      'the open issues of earlier runs are active',
    )
  },
  opts,
)

eachBackend(
  t,
  "fire groups: the assignee read with the locks is the routine's, not the one cached with the trigger",
  async (t, api) => {
    const { routine, squadId, agentId } = await routineWithAssignee(api)
    const hook = await addTrigger(api, routine.id, { kind: 'api' })
    const auth = { authorization: `Bearer ${hook.secret}` }
    // Warm: the trigger is cached with the routine's first assignee.
    t.equal((await fire(api, hook.trigger.fireUrl, '{}', auth)).status, 201)
    const bob = (await api.call('POST', `/api/squads/${squadId}/agents`, { name: 'bob', role: 'software_engineer', adapterType: 'process' })).body.agent
    t.equal((await api.call('PATCH', `/api/routines/${routine.id}`, { assigneeAgentId: bob.id })).status, 200)
    const { result, transactions } = await countTransactions(api.instance, () =>
      burst(
        api.instance,
        hook.trigger.fireUrl,
        Array.from({ length: 3 }, () => ({ body: '{}', headers: auth })),
      ),
    )
    t.ok(transactions <= 4, `committed in groups (${transactions} transactions)`)
    const issues = await Promise.all(fulfilled(result).map((a) => api.instance.storage.issues.get(a!.run.issueId!)))
    t.same(
      issues.map((i) => i?.assigneeAgentId),
      [bob.id, bob.id, bob.id],
      'each issue goes to the new assignee',
    )
    // The new assignee terminated: its issues are refused, whichever agent the cache names.
    t.equal((await api.call('POST', `/api/agents/${bob.id}/terminate`)).status, 200)
    const refused = await burst(api.instance, hook.trigger.fireUrl, [{ body: '{}', headers: auth }])
    t.equal(refused[0]!.status, 'rejected', 'refused')
    t.not(agentId, bob.id)
  },
  opts,
)

eachBackend(
  t,
  'fire groups: a key another transaction stores meanwhile makes the group commit fire by fire',
  async (t, api) => {
    if (api.backend !== 'postgres') {
      t.pass('needs two connections')
      return
    }
    const { routine, squadId } = await routineWithAssignee(api)
    const hook = await addTrigger(api, routine.id, { kind: 'api' })
    const auth = { authorization: `Bearer ${hook.secret}`, 'idempotency-key': 'meanwhile' }
    t.equal((await fire(api, hook.trigger.fireUrl, '{}', { authorization: `Bearer ${hook.secret}` })).status, 201, 'warm')
    const issuesBefore = (await api.call('GET', `/api/squads/${squadId}/issues`)).body.issues.length
    // Another transaction holds an uncommitted run with the key: the group's read cannot see it,
    // its insert waits for it, finds it, and the group starts over fire by fire.
    let release!: () => void
    let stored!: string
    const held = new Promise<void>((r) => (release = r))
    const other = api.instance.storage.transaction(async (tx) => {
      const { run } = await tx.routines.insertRun({
        id: '01900000-0000-7000-8000-000000000001',
        squadId,
        routineId: routine.id,
        triggerId: hook.trigger.id,
        source: 'api',
        status: 'skipped',
        scheduledFor: null,
        idempotencyKey: 'meanwhile',
        variables: {},
        payload: null,
        projectId: null,
        assigneeAgentId: null,
        requestedByAgentId: null,
        issueId: null,
        linkedRunId: null,
        error: null,
        finishedAt: new Date(),
      })
      stored = run.id
      await held
    })
    await new Promise((r) => setTimeout(r, 100))
    const answers = burst(api.instance, hook.trigger.fireUrl, [
      { body: '{}', headers: auth },
      { body: '{}', headers: { authorization: `Bearer ${hook.secret}` } },
    ])
    await new Promise((r) => setTimeout(r, 300))
    release()
    await other
    const [keyed, plain] = fulfilled(await answers)
    t.equal(keyed?.created, false, 'the stored run answers')
    t.equal(keyed?.run.id, stored)
    t.equal(plain?.created, true, 'its neighbour commits alone')
    const issuesAfter = (await api.call('GET', `/api/squads/${squadId}/issues`)).body.issues.length
    t.equal(issuesAfter, issuesBefore + 1, 'one issue: the neighbour’s; none for the repeated key')
  },
  opts,
)

const pg = backends.find((b) => b.name === 'postgres')!
t.test('fire groups: two nodes firing one trigger at once keep exactly-once and the concurrency policy', pg.skip ? { skip: pg.skip } : {}, async (t) => {
  const nodes = await twoPgNodes(t, clock)
  const api = await makeApi(nodes[0]!, 'postgres')
  const { routine } = await routineWithAssignee(api)
  const hook = await addTrigger(api, routine.id, { kind: 'webhook', signingMode: 'vcs_hmac' })
  const body = JSON.stringify({ service: 'api' })
  const headers = { 'x-hub-signature-256': `sha256=${hmac(hook.secret!, body)}` }
  // Ten rounds: each node fires the same signed request five times, both at once.
  for (let round = 0; round < 10; round++) {
    const b = JSON.stringify({ service: 'api', round })
    const h = { 'x-hub-signature-256': `sha256=${hmac(hook.secret!, b)}` }
    const answers = fulfilled(
      (
        await Promise.all(
          nodes.map((n) =>
            burst(
              n,
              hook.trigger.fireUrl,
              Array.from({ length: 5 }, () => ({ body: b, headers: h })),
            ),
          ),
        )
      ).flat(),
    )
    if (!answers.every((a) => a) || answers.filter((a) => a!.created).length !== 1 || new Set(answers.map((a) => a!.run.id)).size !== 1) {
      t.fail(`round ${round}: not exactly one run`, { answers })
    }
  }
  t.equal((await runsOf(api, routine.id)).length, 10, 'one run per signed request')
  t.equal((await fire(api, hook.trigger.fireUrl, body, headers)).status, 201)

  const coalescing = await routineWithAssignee(api, { concurrencyPolicy: 'coalesce_if_active' })
  const c = await addTrigger(api, coalescing.routine.id, { kind: 'webhook' })
  const auth = { authorization: `Bearer ${c.secret}` }
  const answers = fulfilled(
    (
      await Promise.all(
        nodes.map((n) =>
          burst(
            n,
            c.trigger.fireUrl,
            Array.from({ length: 5 }, () => ({ body: '{}', headers: auth })),
          ),
        ),
      )
    ).flat(),
  )
  const made = answers.filter((a) => a?.run.status === 'issue_created')
  t.equal(made.length, 1, 'one issue over both nodes')
  t.ok(
    answers.every((a) => a === made[0] || (a?.run.status === 'coalesced' && a.run.linkedRunId === made[0]!.run.id)),
    'the others coalesced into it',
  )
})
