import { once } from 'node:events'
import t from 'tap'
import WebSocket from 'ws'
import type { LiveFactEvent } from '@slaw/tower'
import { forEachBackend } from './helpers/tower.js'

/** A client that queues every frame it receives. */
async function connect(base: string) {
  const socket = new WebSocket(`${base.replace(/^http/, 'ws')}/api/ingest/v1/live`)
  const frames: any[] = []
  const waiters: Array<(frame: any) => void> = []
  socket.on('message', (data) => {
    const frame = JSON.parse(data.toString())
    const waiter = waiters.shift()
    if (waiter) waiter(frame)
    else frames.push(frame)
  })
  const closed = once(socket, 'close').then(([code]) => code as number)
  await once(socket, 'open')
  return {
    socket,
    closed,
    send: (frame: unknown) => socket.send(typeof frame === 'string' ? frame : JSON.stringify(frame)),
    next: (): Promise<any> => (frames.length ? Promise.resolve(frames.shift()) : new Promise((resolve) => waiters.push(resolve))),
  }
}

const fact = (localId: string) => ({
  type: 'cost_event',
  localId,
  squadLocalId: 'sq-1',
  provider: 'anthropic',
  billingType: 'subscription_included',
  model: 'model-x',
  inputTokens: 10,
  cachedInputTokens: 0,
  outputTokens: 5,
  costCents: 0,
  // Fixed: the same localId with other values would be a correction, not a resend.
  occurredAt: '2026-01-15T12:00:00.000Z',
})

forEachBackend(t, { autoApprove: true }, async (t, h) => {
  t.test('hello, ack, facts and pings', async (t) => {
    const { apiKey, instancePk } = await h.enrolled()
    const received: LiveFactEvent[] = []
    const onFact = (e: LiveFactEvent) => received.push(e)
    h.tower.live.on('fact', onFact)
    t.teardown(() => h.tower.live.off('fact', onFact))

    const client = await connect(h.base)
    client.send({ type: 'hello', protocolVersion: 1, apiKey })
    t.same(await client.next(), { type: 'ack', subscribed: true })
    t.same(h.tower.live.connected(), [instancePk])
    client.send({ type: 'fact', event: fact('live-1') })
    client.send({ type: 'fact', event: fact('live-1') })
    client.send({ type: 'ping' })
    t.same(await client.next(), { type: 'pong' })
    t.equal(received.length, 2)
    t.equal(received[0]!.event.localId, 'live-1')
    t.equal(received[0]!.stored, true)
    t.equal(received[1]!.stored, false, 'a resend is not stored twice')
    t.equal(received[0]!.instance.id, instancePk)

    client.send({ type: 'fact', event: { ...fact('live-2'), type: 'activity_event', action: 'secret.created' } })
    const refused = await client.next()
    t.equal(refused.type, 'error')
    t.equal(refused.code, 'invalid_payload')
    client.send('not json')
    t.equal((await client.next()).code, 'invalid_payload')
    client.send({ type: 'ping' })
    t.same(await client.next(), { type: 'pong' }, 'still open after bad frames')

    // A later sync of the same fact is deduplicated.
    const sync = await h.ingest('/sync', { protocolVersion: 1, sentAt: new Date().toISOString(), batchCursor: '1', upserts: [], facts: [fact('live-1')] }, apiKey)
    t.same(sync.body.accepted, { upserts: 0, facts: 0, deduplicated: 1 })
    client.socket.close()
    await client.closed
    await new Promise((resolve) => setTimeout(resolve, 50))
    t.same(h.tower.live.connected(), [])
  })

  t.test('a bad hello closes the socket', async (t) => {
    const unknown = await connect(h.base)
    unknown.send({ type: 'hello', protocolVersion: 1, apiKey: 'slaw_ik_nope' })
    t.match(await unknown.next(), { type: 'error', code: 'unauthorized' })
    t.equal(await unknown.closed, 1008)

    const early = await connect(h.base)
    early.send({ type: 'fact', event: fact('too-early') })
    t.match(await early.next(), { type: 'error', code: 'unauthorized' })
    t.equal(await early.closed, 1008)

    const { apiKey } = await h.enrolled()
    const old = await connect(h.base)
    old.send({ type: 'hello', protocolVersion: -3, apiKey })
    t.match(await old.next(), { type: 'error', code: 'protocol_version_unsupported' })
    t.equal(await old.closed, 1008)
  })

  t.test('revoking ends an open channel at the next ping', async (t) => {
    const { apiKey, enrollmentId } = await h.enrolled()
    const client = await connect(h.base)
    client.send({ type: 'hello', protocolVersion: 1, apiKey })
    t.same(await client.next(), { type: 'ack', subscribed: true })
    await h.admin('POST', `/enrollments/${enrollmentId}/revoke`)
    client.send({ type: 'ping' })
    t.match(await client.next(), { type: 'error', code: 'enrollment_revoked' })
    t.equal(await client.closed, 1008)
  })

  t.test('a revoked key is refused', async (t) => {
    const { apiKey, enrollmentId } = await h.enrolled()
    await h.admin('POST', `/enrollments/${enrollmentId}/revoke`)
    const client = await connect(h.base)
    client.send({ type: 'hello', protocolVersion: 1, apiKey })
    t.match(await client.next(), { type: 'error', code: 'enrollment_revoked' })
    t.equal(await client.closed, 1008)
  })
})
