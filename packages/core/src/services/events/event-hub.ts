import type { ServerResponse } from 'node:http'
import { compareEventCursors, type EventBroker, type FeedEvent, type Storage } from '../../contracts/storage.js'
import { eventTypeOfAction, isInstanceWide, toMessage, type SquadEventMessage, type SquadEventType } from './event-types.js'
import type { RunOutputOptions } from './run-output.js'
import { detached } from '../foundation/detached.js'

export interface EventStreamOptions {
  /** How long Last-Event-ID resumes without loss; older answers `resync`. Default 1 hour. */
  retentionMs?: number
  /** Open streams per key (an agent key, a run, the Operator key); one more answers 429. Default 20. */
  maxStreamsPerKey?: number
  /** Bytes a stream may have waiting in its socket before it is cut off. Default 256 KiB. */
  maxBufferedBytes?: number
  /** Keep-alive comment interval. Default 15 s. */
  keepAliveMs?: number
  /** A read of the feed without any notification, as a safety net. Default 1 s. */
  pollMs?: number
  /** How run output becomes `run.output` events (throttle, chunk size, kept tail). */
  runOutput?: RunOutputOptions
}

export interface Subscription {
  squadId: string
  /** Counts against `maxStreamsPerKey`. */
  key: string
  /** The first event is the one after this cursor. */
  cursor: string
  /** Operator streams also get `run.output` (a run's output is the Operator's, as its output tail is). */
  operator: boolean
  /**
   * Whether the credential that opened the stream still holds (a revoked key, an ended run, an
   * expired console session end it), asked at every keep-alive.
   */
  stillAllowed?: () => Promise<boolean>
  wants(type: SquadEventType, message: SquadEventMessage): boolean
  res: ServerResponse
}

interface Subscriber extends Subscription {
  live: boolean
  closed: boolean
}

/** Events read per round trip. */
const page = 500
/** How soon to read again when events have committed that are not final yet. */
const pendingRetryMs = 15

/**
 * Live events of one node. One reader follows the whole feed (every squad) from a node-wide tail
 * and hands each event to the subscribers of its squad, so a thousand subscribers cost one query
 * per wake, not a thousand. A new subscriber first catches up from its own cursor (Last-Event-ID)
 * with reads of its squad, and joins the shared tail once a read of it found nothing newer and the
 * tail did not move meanwhile: nothing is lost between the two, and an event is sent to a
 * subscriber only when its cursor is past the subscriber's, so nothing is sent twice.
 *
 * Wakes come from this node's commits (`storage.onCommit`), from other nodes through the broker
 * (PostgreSQL NOTIFY, Redis), and from a slow poll; what is sent is always read from storage.
 */
export class EventHub {
  readonly retentionMs: number
  readonly maxStreamsPerKey: number
  private readonly maxBufferedBytes: number
  private readonly keepAliveMs: number
  private readonly pollMs: number
  private readonly subscribers = new Map<string, Set<Subscriber>>()
  private readonly perKey = new Map<string, number>()
  private count = 0
  private tail: string | undefined
  private tailReady: Promise<string> | undefined
  private reading = false
  private pendingDelay = pendingRetryMs
  private failing = false
  private again = false
  private timers: { keepAlive?: NodeJS.Timeout; poll?: NodeJS.Timeout; retry?: NodeJS.Timeout } = {}
  private stopListening: Promise<(() => Promise<void>) | undefined> | undefined
  private readonly offCommit: (() => void) | undefined
  private closed = false

  constructor(
    private readonly storage: Storage,
    private readonly broker: EventBroker | undefined,
    options: EventStreamOptions = {},
    private readonly log: { warn(obj: object, msg: string): void } = { warn: () => undefined },
  ) {
    this.retentionMs = options.retentionMs ?? 3_600_000
    this.maxStreamsPerKey = options.maxStreamsPerKey ?? 20
    this.maxBufferedBytes = options.maxBufferedBytes ?? 256 * 1024
    this.keepAliveMs = options.keepAliveMs ?? 15_000
    this.pollMs = options.pollMs ?? 1_000
    // Every commit on this node: read here at once, and tell the other nodes.
    this.offCommit = storage.onCommit?.(() => {
      this.wake()
      broker?.publish()
    })
  }

  /** Streams open on this node. */
  get size(): number {
    return this.count
  }

  /** Whether `key` may open one more stream. */
  hasRoomFor(key: string): boolean {
    return (this.perKey.get(key) ?? 0) < this.maxStreamsPerKey
  }

  /** The cursor a subscriber starting now begins after. */
  async start(): Promise<string> {
    return this.tail ?? (await this.storage.events.head())
  }

  /**
   * Adds a stream whose headers are sent: it catches up from `cursor`, then follows the tail. The
   * stream is removed when its response closes.
   */
  async add(sub: Subscription): Promise<void> {
    if (this.closed) {
      sub.res.end()
      return
    }
    const s: Subscriber = { ...sub, live: false, closed: false }
    let set = this.subscribers.get(s.squadId)
    if (!set) this.subscribers.set(s.squadId, (set = new Set()))
    set.add(s)
    this.count++
    this.perKey.set(s.key, (this.perKey.get(s.key) ?? 0) + 1)
    s.res.once('close', () => this.remove(s))
    this.startTimers()
    try {
      await this.listen()
      await this.ensureTail()
      // Catch up with reads of this squad until one finds nothing newer while the tail stood still.
      for (;;) {
        if (s.closed) return
        const tailBefore = this.tail
        const { events } = await this.storage.events.readAfter(s.cursor, page, s.squadId)
        for (const e of events) this.deliver(s, e, undefined)
        if (events.length < page && this.tail === tailBefore) break
      }
      s.live = true
      this.wake()
    } catch (err) {
      this.log.warn({ err }, 'live events: a stream could not catch up; it is closed (the client resumes)')
      this.cut(s, 'unavailable')
    }
  }

  /**
   * Something may have committed: read the feed (coalesced: one read at a time, one more after).
   * Called from a committing request's context; the read starts detached from it.
   */
  readonly wake = (): void => {
    if (this.closed || this.count === 0) return
    if (this.reading) {
      this.again = true
      return
    }
    this.reading = true
    this.startPump()
  }

  private readonly startPump = detached(() => void this.pump())

  /** Ends every stream and stops listening; the instance is closing. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.offCommit?.()
    for (const set of this.subscribers.values()) for (const s of set) this.end(s)
    this.stopTimers()
    const stop = await this.stopListening?.catch(() => undefined)
    await stop?.().catch(() => undefined)
    await this.broker?.close?.().catch(() => undefined)
  }

  private async pump(): Promise<void> {
    try {
      do {
        this.again = false
        const from = await this.ensureTail()
        const { events, pending } = await this.storage.events.readAfter(from, page)
        if (this.closed) return
        for (const e of events) {
          this.tail = e.cursor
          // Serialised once for every subscriber of the squad.
          let text: string | null | undefined
          for (const s of this.subscribers.get(e.squadId) ?? []) {
            if (!s.live) continue
            text = this.deliver(s, e, text)
          }
          const type = eventTypeOfAction[e.action]
          if (!type || !isInstanceWide(type)) continue
          // A squad made or changed: the Operator streams of every other squad hear of it too.
          for (const [squadId, set] of this.subscribers) {
            if (squadId === e.squadId) continue
            for (const s of set) if (s.live && s.operator) text = this.deliver(s, e, text)
          }
        }
        if (events.length >= page) this.again = true
        // Entries committed behind an older open transaction: look again soon, backing off while the
        // horizon stands still (a long transaction elsewhere on the server holds it back).
        if (!pending || events.length) this.pendingDelay = pendingRetryMs
        if (pending && events.length < page) {
          this.retrySoon(this.pendingDelay)
          this.pendingDelay = Math.min(this.pendingDelay * 2, this.pollMs)
        }
      } while (this.again && !this.closed && this.count > 0)
      this.failing = false
    } catch (err) {
      // Once per outage, not every retry.
      if (!this.failing) this.log.warn({ err }, 'live events: reading the feed failed; retrying every 250 ms')
      this.failing = true
      this.retrySoon(250)
    } finally {
      this.reading = false
    }
  }

  /**
   * Writes `e` to `s` when it is past the subscriber's cursor and wanted; returns the message text
   * (null when the event is not streamed) so the caller can reuse it for the squad's next subscriber.
   */
  private deliver(s: Subscriber, e: FeedEvent, text: string | null | undefined): string | null | undefined {
    if (s.closed || compareEventCursors(e.cursor, s.cursor) <= 0) return text
    const message = text === null ? undefined : toMessage(e)
    if (!message || !s.wants(message.type, message) || (message.type === 'run.output' && !s.operator)) {
      // Not for this stream: passed over (a resume starts after it).
      s.cursor = e.cursor
      return message ? text : null
    }
    // A consumer that does not keep up is cut off with a resume hint (the last event it was
    // sent) rather than buffered for.
    if (s.res.writableLength > this.maxBufferedBytes) {
      this.cut(s, 'slow_consumer')
      return text
    }
    s.cursor = e.cursor
    text ??= `id: ${message.id}\nevent: ${message.type}\ndata: ${JSON.stringify(message)}\n\n`
    s.res.write(text)
    return text
  }

  /** Ends a stream with an `error` event that says where to resume (the last event it was sent). */
  private cut(s: Subscriber, reason: 'slow_consumer' | 'unavailable' | 'unauthorized'): void {
    if (s.closed) return
    const hint = { type: 'cutoff', reason, lastEventId: s.cursor, retryAfterMs: 1000 }
    s.res.write(`event: cutoff\ndata: ${JSON.stringify(hint)}\n\n`)
    this.end(s)
  }

  private end(s: Subscriber): void {
    if (!s.res.writableEnded) s.res.end()
    this.remove(s)
  }

  private remove(s: Subscriber): void {
    if (s.closed) return
    s.closed = true
    const set = this.subscribers.get(s.squadId)
    set?.delete(s)
    if (set && set.size === 0) this.subscribers.delete(s.squadId)
    this.count--
    const n = (this.perKey.get(s.key) ?? 1) - 1
    if (n > 0) this.perKey.set(s.key, n)
    else this.perKey.delete(s.key)
    if (this.count === 0) {
      // Nobody follows the feed here now: a later subscriber starts from the head again.
      this.stopTimers()
      this.tail = undefined
      this.tailReady = undefined
    }
  }

  private ensureTail(): Promise<string> {
    if (this.tail !== undefined) return Promise.resolve(this.tail)
    this.tailReady ??= this.storage.events.head().then(
      (head) => {
        this.tail ??= head
        return this.tail
      },
      (err: unknown) => {
        this.tailReady = undefined
        throw err
      },
    )
    return this.tailReady
  }

  /** Subscribes to the broker once, on the first stream of this node. */
  private async listen(): Promise<void> {
    if (!this.broker) return
    this.stopListening ??= this.broker
      .subscribe(() => this.wake())
      .catch((err: unknown) => {
        this.log.warn({ err }, 'live events: listening for other nodes failed; relying on polling')
        this.stopListening = undefined
        return undefined
      })
    await this.stopListening
  }

  private retrySoon(ms = pendingRetryMs): void {
    if (this.timers.retry || this.closed) return
    this.timers.retry = setTimeout(() => {
      this.timers.retry = undefined
      this.wake()
    }, ms)
    this.timers.retry.unref()
  }

  private startTimers(): void {
    if (!this.timers.keepAlive) {
      this.timers.keepAlive = setInterval(() => this.keepAlive(), this.keepAliveMs)
      this.timers.keepAlive.unref()
    }
    if (!this.timers.poll) {
      this.timers.poll = setInterval(() => this.wake(), this.pollMs)
      this.timers.poll.unref()
    }
  }

  private stopTimers(): void {
    clearInterval(this.timers.keepAlive)
    clearInterval(this.timers.poll)
    clearTimeout(this.timers.retry)
    this.timers = {}
  }

  /** A comment line on every stream: proxies keep the connection, and a dead peer is noticed. */
  private keepAlive(): void {
    for (const set of this.subscribers.values()) {
      for (const s of set) {
        if (s.res.writableLength > this.maxBufferedBytes) this.cut(s, 'slow_consumer')
        else s.res.write(': keep-alive\n\n')
        s.stillAllowed?.().then(
          (ok) => ok || this.cut(s, 'unauthorized'),
          () => undefined,
        )
      }
    }
  }
}
