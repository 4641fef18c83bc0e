import { EventEmitter } from 'node:events'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import type {} from '@fastify/websocket'
import type { WebSocket } from 'ws'
import { LiveClientFrame, MIN_PROTOCOL_VERSION, PROTOCOL_VERSION, type Fact, type LiveServerFrame } from '@slaw/core/ingest'
import { TowerError } from '../errors.js'
import { isDataException } from '../http/error-handler.js'
import { compileBody } from '../http/validation.js'
import { keyByAddress, routeRateLimit, type RateLimitPolicy } from '../http/rate-limit.js'
import type { AuthedInstance } from '../services/ingest.js'
import type { TowerServices } from '../services/index.js'

/** A fact received on the live channel, as the tower hands it to listeners. */
export interface LiveFactEvent {
  instance: { id: string; machineId: string; instanceId: string }
  event: Fact
  /** False when the fact was already stored (a resend). */
  stored: boolean
}

/** Live channel events: `fact`, `open` and `close` (instance ids only, never keys). */
export interface TowerLive {
  on(event: 'fact', listener: (e: LiveFactEvent) => void): this
  on(event: 'open' | 'close', listener: (e: { id: string; machineId: string; instanceId: string }) => void): this
  off(event: string, listener: (...args: never[]) => void): this
  emit(event: 'fact', e: LiveFactEvent): boolean
  emit(event: 'open' | 'close', e: { id: string; machineId: string; instanceId: string }): boolean
  /** Instances with a live channel open right now (tower primary keys). */
  connected(): string[]
}

export function createLive(): TowerLive & { track(id: string, delta: 1 | -1): void } {
  const emitter = new EventEmitter() as EventEmitter & TowerLive & { track(id: string, delta: 1 | -1): void }
  const open = new Map<string, number>()
  emitter.connected = () => [...open.keys()]
  emitter.track = (id, delta) => {
    const n = (open.get(id) ?? 0) + delta
    if (n > 0) open.set(id, n)
    else open.delete(id)
  }
  return emitter
}

export interface LiveRoutesOptions {
  services: TowerServices
  live: ReturnType<typeof createLive>
  rateLimit: RateLimitPolicy | null
  /** Close a socket that has not said hello within this time. Default 10 s. */
  helloTimeoutMs?: number
}

const validateFrame = compileBody<LiveClientFrame>(LiveClientFrame)

/** WebSocket close code for a refused hello, a revoked key or a flood: policy violation. */
const POLICY_VIOLATION = 1008
/** Frames waiting to be stored before the channel is closed as flooding. */
const MAX_PENDING_FRAMES = 1000

/**
 * `GET /api/ingest/v1/live` (WebSocket). The instance sends `{type:"hello", protocolVersion, apiKey}`
 * and gets `{type:"ack", subscribed:true}`; then `{type:"fact", event}` frames, stored with the same
 * deduplication as sync (a later sync of the same fact stores nothing twice) and emitted to listeners
 * of `tower.live`, and `{type:"ping"}` frames, answered `{type:"pong"}`. A bad frame gets
 * `{type:"error", code, error}`; a bad hello also closes the socket. Every frame counts as proof of life.
 */
export function liveRoutes(opts: LiveRoutesOptions): FastifyPluginAsync {
  const { services, live } = opts
  const helloTimeoutMs = opts.helloTimeoutMs ?? 10_000

  return async (app: FastifyInstance) => {
    function onSocket(socket: WebSocket): void {
      let instance: AuthedInstance | null = null
      // Kept in memory for the life of the socket only, to re-check it on pings; never logged.
      let keyOf = ''
      let pending = 0
      let closed = false
      let chain: Promise<void> = Promise.resolve()
      let lastTouch = 0

      const send = (frame: LiveServerFrame) => {
        if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(frame))
      }
      const fail = (err: TowerError, close: boolean) => {
        send({ type: 'error', code: err.code, error: err.message })
        if (close) socket.close(POLICY_VIOLATION, err.code)
      }
      const helloTimer = setTimeout(() => fail(new TowerError('unauthorized', 'No hello within the time allowed.'), true), helloTimeoutMs)
      helloTimer.unref()

      const touch = async (pk: string) => {
        if (Date.now() - lastTouch < 5_000) return
        lastTouch = Date.now()
        await services.ingest.touch(pk)
      }

      async function handle(raw: string): Promise<void> {
        let parsed: unknown
        try {
          parsed = JSON.parse(raw)
        } catch {
          return fail(new TowerError('invalid_payload', 'The frame is not valid JSON.'), false)
        }
        if (!validateFrame(parsed)) {
          const first = validateFrame.errors?.[0]
          return fail(new TowerError('invalid_payload', `Invalid frame: ${first?.instancePath || '/'} ${first?.message ?? 'is invalid'}`), instance === null)
        }
        const frame = parsed
        if (frame.type === 'hello') {
          if (instance) return fail(new TowerError('invalid_payload', 'Hello was already said.'), false)
          if (frame.protocolVersion < MIN_PROTOCOL_VERSION || frame.protocolVersion > PROTOCOL_VERSION) {
            return fail(new TowerError('protocol_version_unsupported', `This tower accepts protocol versions ${MIN_PROTOCOL_VERSION} to ${PROTOCOL_VERSION}.`), true)
          }
          instance = await services.ingest.authenticate(frame.apiKey)
          keyOf = frame.apiKey
          clearTimeout(helloTimer)
          if (closed) return
          live.track(instance.pk, 1)
          live.emit('open', { id: instance.pk, machineId: instance.machineId, instanceId: instance.instanceId })
          await touch(instance.pk)
          return send({ type: 'ack', subscribed: true })
        }
        if (!instance) return fail(new TowerError('unauthorized', 'Say hello with the instance API key first.'), true)
        if (frame.type === 'ping') {
          // Re-check the key, so a revocation also ends an open channel within a ping.
          instance = await services.ingest.authenticate(keyOf)
          await touch(instance.pk)
          return send({ type: 'pong' })
        }
        const stored = (await services.ingest.storeFacts(instance.pk, [frame.event])) === 1
        lastTouch = Date.now()
        live.emit('fact', {
          instance: { id: instance.pk, machineId: instance.machineId, instanceId: instance.instanceId },
          event: frame.event,
          stored,
        })
      }

      // Frames are handled one at a time, in order; a failure answers with an error frame.
      socket.on('message', (data, isBinary) => {
        if (++pending > MAX_PENDING_FRAMES) {
          pending = 0
          return fail(new TowerError('rate_limited', 'Frames arrive faster than the tower stores them.'), true)
        }
        const raw = isBinary ? null : data.toString()
        chain = chain
          .then(() => (raw === null ? fail(new TowerError('invalid_payload', 'Send text frames of JSON.'), false) : handle(raw)))
          .finally(() => {
            pending -= 1
          })
          .catch((err: unknown) => {
            if (err instanceof TowerError) fail(err, err.statusCode === 401 || err.statusCode === 403)
            else if (isDataException(err)) {
              fail(new TowerError('invalid_payload', 'A value in the frame is out of range or not representable.'), false)
            } else {
              app.log.error({ err: { name: (err as Error).name, message: (err as Error).message } }, 'live frame failed')
              fail(new TowerError('internal_error'), false)
            }
          })
      })
      socket.on('close', () => {
        closed = true
        clearTimeout(helloTimer)
        if (instance) {
          live.track(instance.pk, -1)
          live.emit('close', { id: instance.pk, machineId: instance.machineId, instanceId: instance.instanceId })
        }
      })
    }

    app.route({
      method: 'GET',
      url: '/live',
      config: routeRateLimit(opts.rateLimit, keyByAddress),
      // A plain GET (no Upgrade) gets a clear answer instead of an empty 404.
      handler: async () => {
        throw new TowerError('invalid_payload', 'This is the live channel: open a WebSocket (Upgrade: websocket) here.')
      },
      wsHandler: onSocket,
    })
  }
}
