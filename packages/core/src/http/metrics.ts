import { createServer, type Server } from 'node:http'
import type { FastifyInstance } from 'fastify'
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { Storage } from '../contracts/storage.js'
import type { TowerClient, TowerStatus } from '../contracts/tower-client.js'
import { Type } from '@sinclair/typebox'
import { errors } from '../schemas/common.js'
import { requireOperator } from '../services/foundation/actor.js'

/** Where `GET /metrics` is served. docs/operations.md. */
export interface MetricsOptions {
  /**
   * A separate port for `/metrics`, without a key (bind it to a private interface). Without it,
   * `/metrics` is served on the API's port and needs an Operator key.
   */
  port?: number
  /** Host of the separate port. Default `127.0.0.1`. */
  host?: string
}

const towerStates: TowerStatus['state'][] = ['disabled', 'disconnected', 'enrolling', 'pending', 'connected', 'unreachable', 'rejected', 'revoked', 'protocol_unsupported']

/**
 * The instance's Prometheus metrics, on prom-client (the maintained Prometheus client for Node:
 * the text exposition format, histograms and process metrics are solved problems). One registry per
 * instance, so two instances in one process never mix their figures.
 */
export class SlawMetrics {
  readonly registry = new Registry()
  private readonly requests: Counter<'method' | 'route' | 'status'>
  private readonly duration: Histogram<'method' | 'route' | 'status'>
  private readonly checkoutConflicts: Counter
  private server: Server | undefined

  constructor(private readonly sources: { storage: Storage; tower?: TowerClient | undefined; eventStreams?: () => number }) {
    const registers = [this.registry]
    collectDefaultMetrics({ register: this.registry, prefix: 'slaw_' })
    this.requests = new Counter({ name: 'slaw_http_requests_total', help: 'HTTP requests answered, by route template and status.', labelNames: ['method', 'route', 'status'], registers })
    this.duration = new Histogram({
      name: 'slaw_http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by route template and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    })
    this.checkoutConflicts = new Counter({ name: 'slaw_checkout_conflicts_total', help: 'Checkouts refused with 409 (issue checked out by another agent, paused project, budget).', registers })
    const tower = sources.tower
    new Gauge({
      name: 'slaw_outbox_depth',
      help: 'Outbox entries not yet acknowledged by the control tower.',
      registers,
      async collect() {
        const s = await tower?.status?.().catch(() => undefined)
        if (s) this.set(s.spoolDepth)
      },
    })
    new Gauge({
      name: 'slaw_outbox_oldest_unsent_age_seconds',
      help: 'Age of the oldest outbox entry the tower has not acknowledged; 0 when none is waiting.',
      registers,
      async collect() {
        const s = await tower?.status?.().catch(() => undefined)
        if (!s || s.oldestUnsentAt === undefined) return
        this.set(s.oldestUnsentAt ? Math.max(0, (Date.now() - s.oldestUnsentAt.getTime()) / 1000) : 0)
      },
    })
    new Gauge({
      name: 'slaw_tower_state',
      help: 'The tower client state: 1 for the current state, 0 for the others.',
      labelNames: ['state'],
      registers,
      async collect() {
        const s = (await tower?.status?.().catch(() => undefined))?.state ?? (tower ? undefined : 'disabled')
        if (!s) return
        for (const state of towerStates) this.set({ state }, state === s ? 1 : 0)
      },
    })
    new Gauge({
      name: 'slaw_tower_last_success_timestamp_seconds',
      help: 'When the tower last accepted a heartbeat or a sync batch (Unix seconds).',
      registers,
      async collect() {
        const s = await tower?.status?.().catch(() => undefined)
        const last = Math.max(s?.lastHeartbeatAt?.getTime() ?? 0, s?.lastSyncAt?.getTime() ?? 0)
        if (last) this.set(last / 1000)
      },
    })
    const eventStreams = sources.eventStreams
    new Gauge({
      name: 'slaw_event_streams',
      help: 'Live event streams (GET /api/squads/{id}/events) open on this node.',
      registers,
      collect() {
        this.set(eventStreams?.() ?? 0)
      },
    })
    const storage = sources.storage
    new Gauge({
      name: 'slaw_db_pool_connections',
      help: 'Database pool connections: `max` configured, `in_use` held by queries and transactions.',
      labelNames: ['kind'],
      registers,
      collect() {
        const p = storage.poolStats?.()
        if (!p) return
        this.set({ kind: 'max' }, p.max)
        this.set({ kind: 'in_use' }, p.inUse)
      },
    })
  }

  /** Counts every answered request; `route` is the template (`/api/issues/:id`), never the raw URL. */
  attach(app: FastifyInstance): void {
    // A callback hook: no promise per request.
    app.addHook('onResponse', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unmatched'
      const labels = { method: request.method, route, status: String(reply.statusCode) }
      this.requests.inc(labels)
      this.duration.observe(labels, reply.elapsedTime / 1000)
      if (route === '/api/issues/:id/checkout' && reply.statusCode === 409) this.checkoutConflicts.inc()
      done()
    })
  }

  /** `GET /metrics` on the API's port, for an Operator key. */
  route(app: FastifyInstance): void {
    const schema = {
      tags: ['operations'],
      summary: 'Prometheus metrics (text exposition format); Operator key',
      response: { 200: Type.String({ description: 'Prometheus text format 0.0.4' }), ...errors },
    }
    app.get('/metrics', { config: { ungated: true }, schema }, async (request, reply) => {
      requireOperator(request.actor)
      return reply.type(this.registry.contentType).send(await this.registry.metrics())
    })
  }

  /** `/metrics` on a port of its own, without a key. Resolves to its address. */
  async listen(port: number, host = '127.0.0.1'): Promise<string> {
    const server = createServer((req, res) => {
      if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'Not found.', code: 'not_found' }))
        return
      }
      this.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': this.registry.contentType }).end(text),
        () => res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'Internal error.', code: 'internal_error' })),
      )
    })
    this.server = server
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, host, () => resolve())
    })
    const a = server.address() as { port: number }
    return `http://${host}:${a.port}`
  }

  async close(): Promise<void> {
    const server = this.server
    this.server = undefined
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
