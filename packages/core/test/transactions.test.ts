import t from 'tap'
import { createInstance, type Storage, type StorageSession } from '@slaw/core'
import { backends } from './helpers/backends.js'
import { makeApi, operatorToken, testAdapters, type TestApi, testMasterKey } from './helpers/instance.js'
import { addIssue, isError } from './helpers/fixtures.js'

/**
 * A decorator over the real storage: every call goes to it, except that the write carrying the
 * change's outbox rows (`outbox.append`, or `activity.record`, which writes the activity entry and
 * its outbox rows in one statement) throws once after `failOnce()`, the way a dropped connection or
 * a full disk would in the middle of a write. Sessions handed to transaction callbacks are wrapped
 * too, so the failure strikes inside the request's own transaction, after the rows before it were written.
 */
function faulty(real: Storage): { storage: Storage; failOnce(): void; failures(): number } {
  let armed = false
  let failures = 0
  const failing = <R extends object>(target: R, method: string): R =>
    new Proxy(target, {
      get(o, prop) {
        const value = Reflect.get(o, prop, o)
        if (prop === method) {
          return async (...args: unknown[]) => {
            if (armed) {
              armed = false
              failures++
              throw new Error('simulated: connection reset while writing outbox row (secret detail 7f3a)')
            }
            return (value as (...a: unknown[]) => unknown).apply(o, args)
          }
        }
        return typeof value === 'function' ? value.bind(o) : value
      },
    })
  const wrap = (prop: string | symbol, value: unknown): unknown => {
    if (prop === 'outbox') return failing(value as StorageSession['outbox'], 'append')
    if (prop === 'activity') return failing(value as StorageSession['activity'], 'record')
    return undefined
  }
  const session = (target: StorageSession): StorageSession => new Proxy(target, { get: (s, prop) => wrap(prop, Reflect.get(s, prop, s)) ?? Reflect.get(s, prop, s) })
  const storage = new Proxy(real, {
    get(s, prop) {
      if (prop === 'transaction') return <T>(fn: (tx: StorageSession) => Promise<T>) => s.transaction((tx) => fn(session(tx)))
      const value = Reflect.get(s, prop, s)
      const wrapped = wrap(prop, value)
      if (wrapped) return wrapped
      return typeof value === 'function' ? value.bind(s) : value
    },
  })
  return { storage, failOnce: () => void (armed = true), failures: () => failures }
}

for (const backend of backends) {
  t.test(`transactions: a failure mid-write leaves nothing half-written [${backend.name}]`, backend.skip ? { skip: backend.skip } : {}, async (t) => {
    const { storage: real, dispose } = await backend.create()
    const fault = faulty(real)
    const instance = await createInstance({ storage: fault.storage, operatorKey: operatorToken, masterKey: testMasterKey, adapters: testAdapters, logger: false })
    t.teardown(async () => {
      await instance.close()
      await dispose()
    })
    const api: TestApi = await makeApi(instance, backend.name)
    const s = await api.seed('Atomic')
    const activityBefore = await real.activity.list({ squadId: s.squadId, limit: 500 })

    // Issue create: issue number reserved and issue row inserted, then the activity and outbox write fails.
    fault.failOnce()
    const failed = await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: 'doomed', description: 'never stored' })
    t.equal(fault.failures(), 1, 'the fault struck')
    isError(t, failed, 500, 'internal_error', 'a storage failure')
    t.equal(failed.body.error, 'Internal error.', 'the body carries no internals')
    t.notOk(JSON.stringify(failed.body).includes('7f3a'), 'not the driver message')
    t.same((await api.call('GET', `/api/squads/${s.squadId}/issues`)).body.issues, [], 'no issue row')
    t.same((await api.call('GET', `/api/squads/${s.squadId}/issues?q=doomed`)).body.issues, [], 'not even in search')
    t.same(await real.activity.list({ squadId: s.squadId, limit: 500 }), activityBefore, 'no activity row')
    isError(t, await api.call('GET', `/api/issues/${s.prefix}-1`), 404, 'not_found', 'the identifier was never taken')
    const next = await addIssue(api, s.squadId, { title: 'survivor' })
    t.equal(next.identifier, `${s.prefix}-1`, 'the issue number was not consumed: the next issue is number 1')
    t.equal((await real.activity.list({ squadId: s.squadId, entityType: 'issue', limit: 10 })).length, 1, 'the next write is whole again')

    // Checkout: status, assignee and holder change, then the activity and outbox write fails.
    fault.failOnce()
    isError(t, await api.call('POST', `/api/issues/${next.id}/checkout`, { agentId: s.agentId }, s.agentToken), 500, 'internal_error', 'checkout fails')
    const after = (await api.call('GET', `/api/issues/${next.id}`)).body.issue
    t.same([after.status, after.assigneeAgentId, after.checkoutAgentId], ['todo', null, null], 'the checkout rolled back')
    t.equal((await api.call('POST', `/api/issues/${next.id}/checkout`, { agentId: s.agentId }, s.agentToken)).status, 200, 'and can be retried')

    // Agent create: row, activity and key all or nothing.
    fault.failOnce()
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/agents`, { name: 'ghost', role: 'x', adapterType: 'process' }), 500, 'internal_error', 'agent create fails')
    t.same(
      (await api.call('GET', `/api/squads/${s.squadId}/agents`)).body.agents.map((a: any) => a.name),
      ['alice'],
      'no agent row',
    )
    t.equal((await api.call('POST', `/api/squads/${s.squadId}/agents`, { name: 'ghost', role: 'x', adapterType: 'process' })).status, 201, 'the name is still free')

    // Squad archive: squad status and paused agents roll back together.
    fault.failOnce()
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/archive`), 500, 'internal_error', 'archive fails')
    t.equal((await api.call('GET', `/api/squads/${s.squadId}`)).body.squad.status, 'active')
    t.same(
      (await api.call('GET', `/api/squads/${s.squadId}/agents`)).body.agents.map((a: any) => a.status),
      ['active', 'active'],
      'no agent was paused',
    )

    // Comment with reopen: the comment and the reopen commit together or not at all.
    await api.call('PATCH', `/api/issues/${next.id}`, { status: 'done' })
    fault.failOnce()
    isError(t, await api.call('POST', `/api/issues/${next.id}/comments`, { body: 'reopen please', reopen: true }), 500, 'internal_error', 'comment + reopen fails')
    t.same((await api.call('GET', `/api/issues/${next.id}/comments`)).body.comments, [], 'no comment')
    t.equal((await api.call('GET', `/api/issues/${next.id}`)).body.issue.status, 'done', 'not reopened')
    t.same((await api.call('GET', `/api/squads/${s.squadId}/issues?q=reopen`)).body.issues, [], 'the search document did not change')
  })
}
