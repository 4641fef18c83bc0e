import t from 'tap'
import { compareEventCursors } from '@slaw/core'
import { eachBackend, operatorToken } from './helpers/instance.js'
import { openSse, type SseMessage } from './helpers/sse.js'

const ids = (ms: SseMessage[]) => ms.map((m) => m.id!)
const increasing = (list: string[]) => list.every((id, i) => i === 0 || compareEventCursors(list[i - 1]!, id) < 0)

eachBackend(t, "events: a squad's changes as Server-Sent Events, in order, filtered, resumable", async (t, api) => {
  const address = await api.instance.listen({ port: 0 })
  const s = await api.seed('Live')
  const other = await api.seed('Elsewhere')
  const path = `/api/squads/${s.squadId}/events`

  // Issue events only: the assignment also queues and runs a heartbeat (run.* events).
  const stream = await openSse(address, `${path}?types=issue.*`, operatorToken)
  t.equal(stream.status, 200)
  t.match(stream.headers['content-type'], /^text\/event-stream/)

  const issue = (await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: 'watched', assigneeAgentId: s.agentId })).body.issue
  t.equal((await api.call('POST', `/api/issues/${issue.id}/checkout`, { agentId: s.agentId }, s.agentToken)).status, 200)
  t.equal((await api.call('POST', `/api/issues/${issue.id}/comments`, { body: 'on it' }, s.agentToken)).status, 201)
  t.equal((await api.call('POST', `/api/issues/${issue.id}/release`, undefined, s.agentToken)).status, 200)
  // Another squad's change is not this stream's.
  await api.call('POST', `/api/squads/${other.squadId}/issues`, { title: 'not here' })

  const got = await stream.next(4)
  t.same(
    got.map((m) => m.event),
    ['issue.created', 'issue.checked_out', 'issue.commented', 'issue.released'],
    'one event per change, in order',
  )
  t.ok(increasing(ids(got)), 'ids increase')
  t.same(
    got.map((m) => m.data.type),
    got.map((m) => m.event),
    'data carries its type',
  )
  t.equal(got[0]!.data.issueId, issue.id)
  t.equal(got[0]!.data.squadId, s.squadId)
  t.equal(got[0]!.data.id, got[0]!.id, 'data.id is the SSE id')
  t.equal(got[1]!.data.agentId, s.agentId)

  // Filters: types and issueId.
  const other2 = (await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: 'second' })).body.issue
  const filtered = await openSse(address, `${path}?types=issue.checked_out,issue.released&issueId=${issue.id}&lastEventId=${encodeURIComponent(got[0]!.id!)}`, operatorToken)
  t.equal(filtered.status, 200)
  const f = await filtered.next(2)
  t.same(
    f.map((m) => m.event),
    ['issue.checked_out', 'issue.released'],
    'types and issueId filter; lastEventId in the query resumes too',
  )
  t.equal((await openSse(address, `${path}?types=nope.*`, operatorToken)).status, 400, 'an unknown type pattern is a 400')

  // Resume: drop the connection mid-stream, write more, reconnect with Last-Event-ID.
  const seen = await stream.next(5)
  t.equal(seen[4]!.data.entityId, other2.id)
  stream.close()
  for (let i = 0; i < 5; i++) await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: `while away ${i}` })
  const resumed = await openSse(address, `${path}?types=issue.*`, operatorToken, { 'last-event-id': seen[4]!.id! })
  const rest = await resumed.next(5)
  t.same(rest.map((m) => m.data.data?.title ?? m.data.entityId).length, 5)
  t.same(
    rest.map((m) => m.event),
    Array(5).fill('issue.created'),
    'exactly the missed events',
  )
  t.ok(increasing([...ids(seen), ...ids(rest)]), 'nothing doubled or out of order across the reconnect')
  await new Promise((r) => setTimeout(r, 100))
  t.equal(resumed.messages.length, 5, 'and nothing more')

  // An unknown or malformed Last-Event-ID answers resync, then follows from now.
  const lost = await openSse(address, `${path}?types=issue.*`, operatorToken, { 'last-event-id': '1-0-00000000-0000-0000-0000-000000000000' })
  const [first] = await lost.next(1)
  t.equal(first!.event, 'resync')
  t.equal(first!.data.reason, 'unknown_event')
  await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: 'after resync' })
  t.equal((await lost.next(2))[1]!.event, 'issue.created', 'then live events')

  // Agent keys: their own squad only.
  const mine = await openSse(address, path, s.agentToken)
  t.equal(mine.status, 200, 'an agent key streams its squad')
  const theirs = await openSse(address, `/api/squads/${other.squadId}/events`, s.agentToken)
  t.equal(theirs.status, 404, 'another squad answers 404')
  t.equal((await theirs.body()).code, 'not_found')
  const anonymous = await openSse(address, path, '')
  t.equal(anonymous.status, 401)
  mine.close()

  // Closing the instance ends the streams.
  const open = [resumed, lost, filtered]
  await api.instance.close()
  await Promise.all(open.map((x) => x.ended))
  t.pass('every stream ended when the instance closed')
})

eachBackend(
  t,
  'events: streams per key are capped; a slow consumer is cut off with a resume hint',
  async (t, api) => {
    const address = await api.instance.listen({ port: 0 })
    const s = await api.seed('Bounded')
    const path = `/api/squads/${s.squadId}/events`
    const a = await openSse(address, path, s.agentToken)
    const b = await openSse(address, path, s.agentToken)
    t.equal(a.status, 200)
    t.equal(b.status, 200)
    const c = await openSse(address, path, s.agentToken)
    t.equal(c.status, 429, 'one stream past the cap answers 429')
    t.equal((await c.body()).code, 'too_many_streams')
    t.equal((await openSse(address, path, operatorToken)).status, 200, 'another key is not affected')
    b.close()
    await new Promise((r) => setTimeout(r, 50))
    const d = await openSse(address, path, s.agentToken)
    t.equal(d.status, 200, 'a closed stream frees its place')
    d.close()
    t.ok(a.comments.includes('keep-alive'), 'idle streams get keep-alive comments')

    // A key revoked while its stream is open: the stream ends at the next keep-alive.
    const extra = await api.call('POST', `/api/agents/${s.agentId}/keys`, { name: 'short-lived' })
    const doomed = await openSse(address, path, extra.body.token)
    t.equal(doomed.status, 200)
    t.equal((await api.call('DELETE', `/api/agents/${s.agentId}/keys/${extra.body.key.id}`)).status, 200)
    await doomed.ended
    // (A stream opened without Last-Event-ID may first carry the seed's last changes, committed an
    // instant before it opened: only its end is this test's.)
    t.same(
      doomed.messages.filter((m) => m.event === 'cutoff').map((m) => [m.event, m.data.reason]),
      [['cutoff', 'unauthorized']],
      "a revoked key's stream is cut off",
    )
    t.equal(doomed.messages.at(-1)?.event, 'cutoff', 'and that is the last it carries')

    // A client that stops reading: its socket fills, the server's buffer passes the limit, and the
    // stream ends with a cutoff naming the last event it was sent.
    a.res.pause()
    const before = process.memoryUsage().rss
    const big = 'x'.repeat(16 * 1024)
    const entries = Array.from({ length: 400 }, (_, i) => ({
      id: crypto.randomUUID(),
      squadId: s.squadId,
      actorType: 'system' as const,
      actorId: 'test',
      action: 'issue.updated',
      entityType: 'issue',
      entityId: crypto.randomUUID(),
      agentId: null,
      runId: null,
      details: { n: i, padding: big },
      createdAt: new Date(),
    }))
    for (let i = 0; i < entries.length; i += 50) await api.instance.storage.transaction((tx) => tx.activity.record(entries.slice(i, i + 50), []))
    // 6.4 MB was written to the feed; the stream must not hold it.
    await new Promise((r) => setTimeout(r, 500))
    a.res.resume()
    await a.ended
    const last = a.messages[a.messages.length - 1]!
    t.equal(last.event, 'cutoff', 'the stream ends with a cutoff')
    t.equal(last.data.reason, 'slow_consumer')
    t.equal(last.data.lastEventId, a.messages[a.messages.length - 2]?.id ?? last.data.lastEventId, 'naming the last event it was sent')
    t.ok(a.messages.length < 400, `it was cut off before all 400 events (${a.messages.length - 1} sent)`)
    t.ok(process.memoryUsage().rss - before < 64 * 1024 * 1024, 'memory stayed bounded')
    // Resuming from the hint goes on where it stopped.
    const again = await openSse(address, path, s.agentToken, { 'last-event-id': last.data.lastEventId })
    const next = await again.next(1)
    t.equal(next[0]!.event, 'issue.updated')
    t.ok(compareEventCursors(next[0]!.id!, last.data.lastEventId) > 0, 'the next event after the hint')
    const sent = new Set(a.messages.slice(0, -1).map((m) => m.data.data.n))
    t.notOk(sent.has(next[0]!.data.data.n), 'not one already sent')
    again.close()
  },
  { events: { maxStreamsPerKey: 2, maxBufferedBytes: 64 * 1024, keepAliveMs: 20 } },
)

// Run output: the adapter's chunks become throttled run.output events (Operator streams only), and
// the output route answers the kept tail while the run goes on and after it ended.
let release: () => void = () => undefined
eachBackend(
  t,
  'events: run output live, and the output route during and after the run',
  async (t, api) => {
    const address = await api.instance.listen({ port: 0 })
    const s = await api.seed('Output')
    const operatorStream = await openSse(address, `/api/squads/${s.squadId}/events?types=run.*`, operatorToken)
    const agentStream = await openSse(address, `/api/squads/${s.squadId}/events?types=run.*`, s.agentToken)
    const gate = new Promise<void>((r) => (release = r))
    ;(globalThis as { outputGate?: Promise<void> }).outputGate = gate
    const woke = await api.call('POST', `/api/agents/${s.agentId}/wake`, { reason: 'output test' })
    t.equal(woke.status, 202)
    const runId = woke.body.run.id as string

    // While it runs: the first chunks are there, live and through the route.
    const live = await operatorStream.next(3, 10_000)
    t.same(
      live.map((m) => m.event),
      ['run.queued', 'run.started', 'run.output'],
    )
    t.same(live[2]!.data.data, { stream: 'stdout', text: 'hello 0\nhello 1\n', offset: 0 }, 'chunks written together are one event (throttled)')
    t.equal(live[2]!.data.runId, runId)
    const during = await api.call('GET', `/api/heartbeat-runs/${runId}/output`)
    t.equal(during.status, 200)
    t.equal(during.body.status, 'running')
    t.same(
      during.body.chunks.map((c: any) => c.text),
      ['hello 0\nhello 1\n'],
    )
    t.equal(during.body.outputTail, null)
    t.equal((await api.call('GET', `/api/heartbeat-runs/${runId}/output`, undefined, s.agentToken)).status, 403, 'Operator only')
    t.equal((await api.call('GET', `/api/heartbeat-runs/${crypto.randomUUID()}/output`)).status, 404, 'an unknown run is a 404')

    // The run's own token streams its squad (and only its squad).
    const runToken = (globalThis as { runToken?: string }).runToken!
    const other = await api.seed("Not the run's")
    const asRun = await openSse(address, `/api/squads/${s.squadId}/events`, runToken, { 'x-svc-run-id': runId })
    t.equal(asRun.status, 200, 'a run token sees its squad')
    t.equal((await openSse(address, `/api/squads/${other.squadId}/events`, runToken, { 'x-svc-run-id': runId })).status, 404, 'and not another')
    asRun.close()

    release()
    const all = await operatorStream.next(6, 10_000)
    t.same(
      all
        .slice(3)
        .map((m) => m.event)
        .sort(),
      ['run.finished', 'run.output', 'run.output'],
    )
    const outputs = all.slice(3).filter((m) => m.event === 'run.output')
    t.same(outputs[0]!.data.data, { stream: 'stderr', text: 'careful\n', offset: 0 })
    t.same(outputs[1]!.data.data, { stream: 'stdout', text: 'done [REDACTED]\n', offset: 16 }, 'offsets count per stream; a bound secret (the run token) is scrubbed')
    const after = await api.call('GET', `/api/heartbeat-runs/${runId}/output?after=${during.body.next}`)
    t.equal(after.body.status, 'succeeded')
    t.same(
      after.body.chunks.map((c: any) => [c.stream, c.text]),
      [
        ['stderr', 'careful\n'],
        ['stdout', 'done [REDACTED]\n'],
      ],
      'after= reads on',
    )
    t.type(after.body.outputTail, 'string', 'and the stored tail once it ended')

    await new Promise((r) => setTimeout(r, 300))
    t.same(
      agentStream.messages.map((m) => m.event),
      ['run.queued', 'run.started', 'run.finished'],
      'an agent key gets no run output',
    )
  },
  () => ({
    adapters: [
      {
        type: 'process',
        wake: async (input) => {
          ;(globalThis as { runToken?: string }).runToken = input.env.SVC_API_KEY
          input.onOutput?.({ stream: 'stdout', text: 'hello 0\n' })
          input.onOutput?.({ stream: 'stdout', text: 'hello 1\n' })
          await (globalThis as { outputGate?: Promise<void> }).outputGate
          input.onOutput?.({ stream: 'stderr', text: 'careful\n' })
          await new Promise((r) => setTimeout(r, 400))
          input.onOutput?.({ stream: 'stdout', text: `done ${input.env.SVC_API_KEY}\n` })
          await new Promise((r) => setTimeout(r, 500))
          return { status: 'succeeded', output: 'hello 0\nhello 1\ndone\n' }
        },
      },
    ],
  }),
)

eachBackend(t, 'events: a squad made or renamed reaches every Operator stream, agents of other squads never', async (t, api) => {
  const address = await api.instance.listen({ port: 0 })
  const s = await api.seed('Watching')
  const operator = await openSse(address, `/api/squads/${s.squadId}/events`, operatorToken)
  const agent = await openSse(address, `/api/squads/${s.squadId}/events`, s.agentToken)
  const onlySquads = await openSse(address, `/api/squads/${s.squadId}/events?types=squad.*`, operatorToken)
  t.equal(operator.status, 200)
  t.equal(agent.status, 200)
  // A stream opened without Last-Event-ID starts about now: on a busy machine it may still carry
  // the seed's own events (the squad made, its agent's key). This test is about what comes after.
  const since = Date.now()
  const fresh = async (stream: typeof operator, n: number) => {
    for (let k = n; k < n + 20; k++) {
      const after = (await stream.next(k, 10_000)).filter((m) => Date.parse(m.data.at) >= since)
      if (after.length >= n) return after.slice(0, n)
    }
    throw new Error(`fewer than ${n} events after the seed`)
  }

  const made = (await api.call('POST', '/api/squads', { name: 'Made elsewhere' })).body.squad
  t.equal((await api.call('PATCH', `/api/squads/${made.id}`, { name: 'Renamed elsewhere' })).status, 200)
  t.equal((await api.call('PATCH', `/api/squads/${s.squadId}`, { name: 'Watching still' })).status, 200)
  await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: 'here' })

  const got = await fresh(operator, 4)
  t.same(
    got.map((m) => [m.event, m.data.squadId, m.data.entityType]),
    [
      ['squad.created', made.id, 'squad'],
      ['squad.updated', made.id, 'squad'],
      ['squad.updated', s.squadId, 'squad'],
      ['issue.created', s.squadId, 'issue'],
    ],
    "the Operator hears of another squad's making and renaming, in order with its own squad's events",
  )
  t.match(got[0]!.data.data, { name: 'Made elsewhere' })
  t.match(got[1]!.data.data, { name: 'Renamed elsewhere' })
  t.same(
    (await fresh(onlySquads, 3)).map((m) => m.event),
    ['squad.created', 'squad.updated', 'squad.updated'],
    'squad.* filters them',
  )
  const seen = await fresh(agent, 2)
  t.same(
    seen.map((m) => [m.event, m.data.squadId]),
    [
      ['squad.updated', s.squadId],
      ['issue.created', s.squadId],
    ],
    'an agent hears of its own squad only',
  )
  t.equal((await openSse(address, `/api/squads/${s.squadId}/events?types=squads.*`, operatorToken)).status, 400)
  for (const stream of [operator, agent, onlySquads]) stream.close()
})
