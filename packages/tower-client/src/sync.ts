import { costEventFact, outboxUpserts, projectUpsert, type OutboxEntry } from '@slaw/core'
import { RESYNC_TYPES, type Fact, type ManifestResponse, type ResyncType, type SyncResponse, type Upsert } from '@slaw/core/ingest'
import { IngestError, type IngestHttp } from './http.js'
import { monthOf } from './limits.js'
import { parkRecord } from './rejections.js'
import { refusedAsInvalid, type Reporter } from './reporter.js'
import { fillBatch, padCursor, seqGreater, toWire, type Batch } from './wire.js'

/** Rows per page of a full resync. */
const RESYNC_PAGE = 1000

type WireRecord = Upsert | Fact
type ResyncPage = { payloads: Array<Record<string, unknown>>; lastId: string | null; count: number }

/** What sync asks of the rest of the client. */
export interface SyncHooks {
  /** Applies the directives of an answer. */
  applyDirectives(list: unknown): Promise<void>
  /** Sends a heartbeat when one is due (a long drain does not starve them). */
  heartbeatIfDue(http: IngestHttp, apiKey: string): Promise<void>
  /** The tower acknowledged a batch: reporting is healthy. */
  acknowledged(): void
}

/**
 * Sync: drains the transactional outbox in cursored batches (the cursor moves only once the tower
 * acknowledged a batch), the reconciliation manifest, and full resyncs of the types the tower
 * asks for. A batch the tower refuses as invalid is halved until the refused record stands alone;
 * that record is parked and everything else goes through.
 */
export class OutboxSync {
  constructor(
    private readonly r: Reporter,
    private readonly hooks: SyncHooks,
  ) {}

  /** Sends the outbox after the acknowledged cursor, batch by batch, until nothing is left. */
  async drain(http: IngestHttp, apiKey: string): Promise<void> {
    const { ctx, store, options } = this.r
    const limits = { upserts: options.batchUpserts, facts: options.batchFacts }
    const readLimit = limits.upserts + limits.facts
    for (;;) {
      if (this.r.stopped) return
      const rows = await ctx.storage.outbox.readAfter(store.data.cursor ?? '0', readLimit)
      if (!rows.length) return
      const batch = fillBatch(rows, this.r.wire, limits)
      for (const s of batch.skipped) ctx.log.warn({ seq: s.seq, reason: s.reason }, 'outbox row not sent to the tower')
      await this.sendRows(http, apiKey, rows.slice(0, batch.rows), batch)
      await this.hooks.heartbeatIfDue(http, apiKey)
      if (rows.length < readLimit && batch.rows === rows.length) return
    }
  }

  /**
   * Sends outbox rows as one batch and moves the cursor past them once acknowledged. Refused as
   * invalid: halved until the refused record stands alone, which is parked and passed over.
   */
  private async sendRows(http: IngestHttp, apiKey: string, rows: OutboxEntry[], batch: Batch): Promise<void> {
    const lastSeq = batch.lastSeq!
    try {
      const directives = await this.sendBatch(http, apiKey, padCursor(lastSeq), batch.upserts, batch.facts)
      await this.acknowledge(lastSeq)
      await this.hooks.applyDirectives(directives)
    } catch (err) {
      if (!refusedAsInvalid(err)) throw err
      const records: WireRecord[] = [...batch.upserts, ...batch.facts]
      if (records.length <= 1 || rows.length <= 1) {
        if (!(await this.takesEmptyBatch(http, apiKey))) throw err
        await parkRecord(this.r, err, records[0])
        await this.acknowledge(lastSeq)
        return
      }
      const half = Math.ceil(rows.length / 2)
      for (const part of [rows.slice(0, half), rows.slice(half)]) {
        await this.sendRows(http, apiKey, part, fillBatch(part, this.r.wire))
      }
    }
  }

  /**
   * Before a record is parked: does the tower take a batch at all? An empty one, at the cursor it
   * already acknowledged, tells a refused record from a refused envelope (which parks nothing and
   * backs off instead, so a tower that refuses every batch never empties the outbox into the park).
   */
  private async takesEmptyBatch(http: IngestHttp, apiKey: string): Promise<boolean> {
    try {
      const cursor = padCursor(this.r.store.data.cursor ?? '0')
      await this.hooks.applyDirectives(await this.sendBatch(http, apiKey, cursor, [], []))
      return true
    } catch (err) {
      if (refusedAsInvalid(err)) return false
      throw err
    }
  }

  /** The tower stored everything up to `seq` (or it was parked): the cursor moves, with the report, in one write. */
  private async acknowledge(seq: string): Promise<void> {
    const store = this.r.store
    await store.save({ cursor: seq, report: { ...store.report(), lastSyncAt: new Date().toISOString() } })
  }

  /** Sends one batch; resolves to the directives of the answer once the tower acknowledged it. */
  private async sendBatch(http: IngestHttp, apiKey: string, batchCursor: string, upserts: Upsert[], facts: Fact[]): Promise<unknown> {
    const body = { protocolVersion: this.r.options.protocolVersion, sentAt: new Date().toISOString(), batchCursor, upserts, facts }
    const res = await http.post<SyncResponse>('/sync', body, { apiKey, signal: this.r.signal })
    const ack = res.body.acknowledgedCursor
    // Only an acknowledgement at or past what we proposed moves the cursor.
    if (typeof ack !== 'string' || seqGreater(batchCursor, ack)) {
      throw new IngestError(502, 'not_acknowledged', `sync: the tower acknowledged ${String(ack)} for batch ${batchCursor}`)
    }
    this.hooks.acknowledged()
    return res.body.directives
  }

  // Reconciliation and full resync -------------------------------------------------------------

  /** The tower asked for a manifest, none was sent yet, or the last is older than the interval. */
  reconcileDue(): boolean {
    const m = this.r.store.data.manifest ?? { lastAt: null, requested: false }
    return m.requested || !m.lastAt || Date.now() - Date.parse(m.lastAt) >= this.r.options.manifestIntervalSec * 1000
  }

  /** Resyncs are queued (or in progress). */
  resyncPending(): boolean {
    return Object.keys(this.r.store.data.resync ?? {}).length > 0
  }

  /** POST /manifest when due; queues a resync of each type the tower asks for. */
  async reconcile(http: IngestHttp, apiKey: string): Promise<void> {
    const { ctx, store, options } = this.r
    if (!this.reconcileDue()) return
    const counts = await ctx.storage.towerState.manifestCounts()
    const body = { protocolVersion: options.protocolVersion, sentAt: new Date().toISOString(), counts }
    const res = await http.post<ManifestResponse>('/manifest', body, { apiKey, signal: this.r.signal })
    const asked = Array.isArray(res.body.resyncTypes) ? res.body.resyncTypes : []
    const types = asked.filter((t): t is ResyncType => (RESYNC_TYPES as readonly string[]).includes(t))
    const resync = { ...(store.data.resync ?? {}) }
    for (const t of types) resync[t] = ''
    await store.save({ manifest: { lastAt: new Date().toISOString(), requested: false }, ...(types.length ? { resync } : {}) })
    if (types.length) ctx.log.info({ resyncTypes: types }, 'the tower asked for a resync')
  }

  /** Sends current rows of each queued type, page by page; progress is kept so a restart resumes. */
  async resync(http: IngestHttp, apiKey: string): Promise<void> {
    const { ctx, store } = this.r
    for (const type of RESYNC_TYPES) {
      for (;;) {
        const after = store.data.resync?.[type]
        if (after === undefined || this.r.stopped) break
        const page = await this.resyncPage(type, after)
        const records: WireRecord[] = []
        const kinds = new Map<WireRecord, 'upsert' | 'fact'>()
        for (const p of page.payloads) {
          const item = toWire(type === 'cost_event' ? 'fact' : 'upsert', p, this.r.wire)
          if ('skip' in item) {
            ctx.log.warn({ type, reason: item.skip }, 'row not resynced')
            continue
          }
          records.push(item.value)
          kinds.set(item.value, item.kind)
        }
        if (records.length) await this.sendRecords(http, apiKey, records, kinds)
        const resync = { ...(store.data.resync ?? {}) }
        if (page.lastId === null || page.count < RESYNC_PAGE) delete resync[type]
        else resync[type] = page.lastId
        await store.save({ resync, report: { ...store.report(), lastSyncAt: new Date().toISOString() } })
      }
    }
  }

  /**
   * Resync records, halved on a refusal like outbox rows. A resync batch carries no outbox rows:
   * it proposes the cursor already acknowledged.
   */
  private async sendRecords(http: IngestHttp, apiKey: string, records: WireRecord[], kinds: Map<WireRecord, 'upsert' | 'fact'>): Promise<void> {
    const cursor = padCursor(this.r.store.data.cursor ?? '0')
    const upserts = records.filter((i) => kinds.get(i) === 'upsert') as Upsert[]
    const facts = records.filter((i) => kinds.get(i) === 'fact') as Fact[]
    try {
      await this.hooks.applyDirectives(await this.sendBatch(http, apiKey, cursor, upserts, facts))
    } catch (err) {
      if (!refusedAsInvalid(err)) throw err
      if (records.length <= 1) {
        if (!(await this.takesEmptyBatch(http, apiKey))) throw err
        return parkRecord(this.r, err, records[0])
      }
      const half = Math.ceil(records.length / 2)
      await this.sendRecords(http, apiKey, records.slice(0, half), kinds)
      await this.sendRecords(http, apiKey, records.slice(half), kinds)
    }
  }

  /** One page of current rows in the shapes core writes to the outbox (core's builders: one mapping). */
  private async resyncPage(type: ResyncType, after: string): Promise<ResyncPage> {
    const storage = this.r.ctx.storage
    const month = monthOf(new Date()).key
    const spent = async (squadIds: string[], scope: 'squad' | 'agent') => {
      const out = new Map<string, number>()
      for (const squadId of new Set(squadIds)) {
        for (const r of await storage.costs.rollups(squadId, month, scope)) out.set(scope === 'squad' ? squadId : r.key, r.costCents)
      }
      return out
    }
    const ts = storage.towerState
    const page = <T extends { id: string }>(rows: T[], payload: (row: T) => Record<string, unknown>): ResyncPage => ({
      payloads: rows.map(payload),
      lastId: rows.length ? rows[rows.length - 1]!.id : null,
      count: rows.length,
    })
    switch (type) {
      case 'squad': {
        const rows = await ts.scanSquads(after, RESYNC_PAGE)
        const s = await spent(
          rows.map((r) => r.id),
          'squad',
        )
        return page(rows, (r) => outboxUpserts.squad(r, s.get(r.id) ?? 0).payload)
      }
      case 'agent': {
        const rows = await ts.scanAgents(after, RESYNC_PAGE)
        const s = await spent(
          rows.map((r) => r.squadId),
          'agent',
        )
        return page(rows, (r) => outboxUpserts.agent(r, s.get(r.id) ?? 0).payload)
      }
      case 'project':
        return page(await ts.scanProjects(after, RESYNC_PAGE), (r) => projectUpsert(r).payload)
      case 'issue':
        return page(await ts.scanIssues(after, RESYNC_PAGE), (r) => outboxUpserts.issue(r).payload)
      case 'cost_event':
        return page(await ts.scanCostEvents(after, RESYNC_PAGE), (r) => costEventFact(r).payload)
    }
  }
}
