import t from 'tap'
import { createInstance } from '@slaw/core'
import { pgliteStorage } from '@slaw/storage-pg/pglite'
import { createSlawClient, EventStreamError, type SquadEvent } from '@slaw/client'

const operatorKey = 'slaw_op_client_test_0000000000000000'

t.test('@slaw/client against a live instance', async (t) => {
  const instance = await createInstance({
    storage: await pgliteStorage({ dataDir: 'memory://' }),
    operatorKey,
    logger: false,
    adapters: [{ type: 'process', wake: async () => ({ status: 'succeeded' }) }],
  })
  t.teardown(() => instance.close())
  const baseUrl = await instance.listen({ port: 0 })
  const seen: Request[] = []
  const client = createSlawClient({ baseUrl, token: operatorKey, fetch: (req) => (seen.push(req), fetch(req)) })

  const squad = await client.POST('/api/squads', { body: { name: 'Client' } })
  t.equal(squad.response.status, 201)
  const squadId = squad.data!.squad.id
  t.equal(seen[0]!.headers.get('authorization'), `Bearer ${operatorKey}`, 'the token goes as a bearer')
  const agent = await client.POST('/api/squads/{squadId}/agents', { params: { path: { squadId } }, body: { name: 'ada', role: 'software_engineer', adapterType: 'process' } })
  const agentId = agent.data!.agent.id
  const key = await client.POST('/api/agents/{id}/keys', { params: { path: { id: agentId } }, body: { name: 'k' } })
  const agentClient = createSlawClient({ baseUrl, token: key.data!.token, runId: '00000000-0000-7000-8000-000000000001', fetch: (req) => (seen.push(req), fetch(req)) })

  // Errors come back as the typed body, not as a throw.
  const missing = await client.GET('/api/issues/{id}', { params: { path: { id: 'nope' } } })
  t.equal(missing.response.status, 404)
  t.equal(missing.error?.code, 'not_found')
  t.equal(missing.data, undefined)
  const invalid = await client.POST('/api/squads/{squadId}/issues', { params: { path: { squadId } }, body: { title: '' } })
  t.equal(invalid.error?.code, 'invalid_payload')
  t.ok(invalid.error?.details?.length, 'with details')

  // Live events through the iterator, while changes are made.
  const controller = new AbortController()
  const events: SquadEvent[] = []
  const reading = (async () => {
    for await (const e of client.events(squadId, { types: ['issue.*'], signal: controller.signal })) {
      if (e.type === 'resync') continue
      events.push(e)
      if (events.length === 3) break
    }
  })()
  await new Promise((r) => setTimeout(r, 200))
  const issue = await client.POST('/api/squads/{squadId}/issues', { params: { path: { squadId } }, body: { title: 'typed', assigneeAgentId: agentId } })
  const issueId = issue.data!.issue.id
  const checkout = await client.checkout(issueId, { agentId })
  t.equal(checkout.response.status, 200, 'checkout helper')
  const conflict = await client.checkout(issueId, { agentId: '00000000-0000-7000-8000-000000000000' })
  t.ok(conflict.error, 'a refused checkout is a typed error')
  await client.POST('/api/issues/{id}/release', { params: { path: { id: issueId } } })
  await reading
  t.same(
    events.map((e) => e.type),
    ['issue.created', 'issue.checked_out', 'issue.released'],
  )
  t.equal(events[0]!.issueId, issueId)

  // X-Svc-Run-Id is sent for a run's client (this one names no real run: 4xx, typed).
  const me = await agentClient.GET('/api/agents/me')
  t.equal(seen[seen.length - 1]!.headers.get('x-svc-run-id'), '00000000-0000-7000-8000-000000000001')
  t.ok(me.response.status >= 400 && me.error?.code, 'an unknown run is refused with a typed error')

  // A connection cut mid-stream: the iterator reconnects with Last-Event-ID by itself.
  let connections = 0
  const lastIds: Array<string | null> = []
  const flaky = createSlawClient({
    baseUrl,
    token: operatorKey,
    fetch: async (req) => {
      if (!req.url.includes('/events')) return fetch(req)
      connections++
      lastIds.push(req.headers.get('last-event-id'))
      const res = await fetch(req)
      if (connections > 1) return res
      // The first connection dies after its first event.
      const reader = res.body!.getReader()
      let events = 0
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { value, done } = await reader.read()
          if (done) return controller.close()
          controller.enqueue(value)
          events += (new TextDecoder().decode(value).match(/\nevent: /g) ?? []).length
          if (events >= 1) {
            await reader.cancel()
            controller.error(new Error('connection reset'))
          }
        },
      })
      return new Response(body, { status: res.status, headers: res.headers })
    },
  })
  const got: string[] = []
  const start = events[2]!.id
  const consuming = (async () => {
    for await (const e of flaky.events(squadId, { types: ['issue.created'], lastEventId: start, reconnectDelayMs: 50 })) {
      if (e.type === 'resync') continue
      got.push(e.entityId)
      if (got.length === 4) break
    }
  })()
  const made: string[] = []
  for (let i = 0; i < 4; i++) made.push((await client.POST('/api/squads/{squadId}/issues', { params: { path: { squadId } }, body: { title: `n${i}` } })).data!.issue.id)
  await consuming
  t.same(got, made, 'every event once, in order, across the reconnect')
  t.ok(connections >= 2, 'it reconnected')
  t.equal(lastIds[0], start)
  t.ok(lastIds[1] && lastIds[1] !== start, 'resuming after the last event it yielded')

  // A refused stream ends the iterator with a typed error.
  const other = createSlawClient({ baseUrl, token: key.data!.token })
  const otherSquad = (await client.POST('/api/squads', { body: { name: 'Other' } })).data!.squad.id
  const refused = await (async () => {
    for await (const _ of other.events(otherSquad)) break
  })().then(
    () => undefined,
    (err: unknown) => err,
  )
  t.ok(refused instanceof EventStreamError, 'EventStreamError')
  t.equal((refused as EventStreamError).status, 404)
  t.equal((refused as EventStreamError).body?.code, 'not_found')
  controller.abort()
})

t.test('without a token (a browser signed in with a session cookie) no Authorization header is sent', async (t) => {
  const seen: Request[] = []
  const client = createSlawClient({
    baseUrl: 'http://127.0.0.1:9',
    fetch: async (req) => (seen.push(req), new Response(JSON.stringify({ error: 'Unauthorized', code: 'unauthorized' }), { status: 401, headers: { 'content-type': 'application/json' } })),
  })
  const res = await client.GET('/api/squads')
  t.equal(res.response.status, 401)
  t.equal(res.error?.code, 'unauthorized')
  t.equal(seen.length, 1)
  t.equal(seen[0]!.headers.get('authorization'), null, 'no bearer header at all')
  t.equal(seen[0]!.credentials, 'same-origin', 'cookies go with same-origin calls')
})
