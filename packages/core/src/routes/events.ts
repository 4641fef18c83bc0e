import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { isEventCursor, type Storage } from '../contracts/storage.js'
import { SlawError } from '../errors.js'
import { SquadParams, commaListItems, errors } from '../schemas/common.js'
import { EventStreamMessage, EventsHeaders, EventsQuery } from '../schemas/events.js'
import type { EventHub } from '../services/events/event-hub.js'
import { typeMatcher, type SquadEventType } from '../services/events/event-types.js'
import type { Actor } from '../services/foundation/actor.js'

/** Which key a stream counts against for the per-key cap. */
function streamKey(actor: Actor): string {
  if (actor.type === 'agent') return actor.runId ? `run:${actor.runId}` : `agent-key:${actor.keyId}`
  if (actor.type === 'operator') return `operator-key:${actor.keyId ?? 'bootstrap'}`
  return `system:${actor.id}`
}

/**
 * `GET /api/squads/{squadId}/events`: the squad's changes as Server-Sent Events (docs/events.md).
 * The Operator, or an agent key of the squad (another squad's answers 404, like every squad read).
 */
export const eventRoutes: FastifyPluginAsyncTypebox<{ hub: EventHub; storage: Storage }> = async (app, { hub, storage }) => {
  const { squads } = app.slaw.services
  const streamSquadEvents = {
    tags: ['events'],
    description:
      'Server-Sent Events: one message per change (`event:` its type, `id:` its cursor, `data:` the JSON below), keep-alive comments, ' +
      '`resync` when Last-Event-ID is older than the retention, `cutoff` before the server ends a stream. Resume with Last-Event-ID.',
    params: SquadParams,
    querystring: EventsQuery,
    headers: EventsHeaders,
    response: {
      200: { description: 'The event stream.', content: { 'text/event-stream': { schema: EventStreamMessage } } },
      ...errors,
      429: Type.Ref('ErrorBody'),
    },
  } as const

  // No HEAD twin: a HEAD would hold a stream open with nothing to send.
  app.get('/api/squads/:squadId/events', { schema: streamSquadEvents as never, exposeHeadRoute: false }, async (req, reply) => {
    const params = req.params as { squadId: string }
    const query = req.query as { types?: string; issueId?: string; agentId?: string; lastEventId?: string }
    const squad = await squads.visible(storage, req.actor, params.squadId)
    const key = streamKey(req.actor)
    if (!hub.hasRoomFor(key)) throw new SlawError('too_many_streams', `This key has ${hub.maxStreamsPerKey} live event streams open on this node; close one first.`)

    const last = (req.headers['last-event-id'] as string | undefined) ?? query.lastEventId
    let cursor: string | undefined
    let resync: { type: 'resync'; reason: 'too_old' | 'unknown_event'; lastEventId: string } | undefined
    if (last !== undefined && last !== '') {
      const at = isEventCursor(last) ? await storage.events.locate(last) : undefined
      if (at && Date.now() - at.getTime() <= hub.retentionMs) cursor = last
      else resync = { type: 'resync', reason: at ? 'too_old' : 'unknown_event', lastEventId: '' }
    }
    cursor ??= await hub.start()

    const wantsType = typeMatcher(commaListItems(query.types))
    const wants = (type: SquadEventType, m: { issueId: string | null; agentId: string | null }) =>
      wantsType(type) && (!query.issueId || m.issueId === query.issueId) && (!query.agentId || m.agentId === query.agentId)

    // Asked again at every keep-alive: a revoked key or an ended run stops its streams too.
    const opener = req.actor
    const session = req.consoleSession
    const authorization = req.headers.authorization
    const runHeader = req.headers['x-svc-run-id']
    const stillAllowed = async (): Promise<boolean> => {
      try {
        const actor = session
          ? (await app.slaw.services.consoleSessions.authenticate(session.token)).actor
          : await app.slaw.services.auth.authenticate(authorization, Array.isArray(runHeader) ? runHeader[0] : runHeader)
        return streamKey(actor) === streamKey(opener)
      } catch (err) {
        // Only a refused credential ends the stream; a database hiccup does not.
        return !(err instanceof SlawError && (err.code === 'unauthorized' || err.code === 'forbidden'))
      }
    }

    reply.hijack()
    const res = reply.raw
    // The connection serves this stream only: it closes when the stream ends.
    res.shouldKeepAlive = false
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' })
    res.write(': slaw events\nretry: 1000\n\n')
    if (resync) res.write(`event: resync\ndata: ${JSON.stringify({ ...resync, lastEventId: cursor })}\n\n`)
    await hub.add({ squadId: squad.id, key, cursor, operator: req.actor.type !== 'agent', wants, stillAllowed, res })
  })
}
