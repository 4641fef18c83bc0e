import { createRequire } from 'node:module'
import type WebSocket from 'ws'
import { INGEST_BASE_PATH, type Fact } from '@slaw/core/ingest'

/**
 * ws is loaded when a live channel first opens, not at start: most instances never open one, and
 * it is more than a megabyte of heap (docs/startup-and-memory.md). A synchronous require keeps
 * `open()` synchronous.
 */
let ws: typeof WebSocket | undefined
const loadWs = () => (ws ??= createRequire(import.meta.url)('ws') as typeof WebSocket)

export interface LiveChannelOptions {
  towerUrl: string
  apiKey: string
  protocolVersion: number
  /** Sends a ping frame this often. */
  pingMs: number
  /** Reads new facts this often. */
  pollMs: number
  /** New facts after `afterSeq`, in order, with the seq they go up to. */
  readFacts(afterSeq: string): Promise<{ facts: Fact[]; lastSeq: string | null }>
  startSeq: string
  log: { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void }
  onClose(): void
}

/**
 * The live channel (docs/ingest-protocol.md): a WebSocket to `{tower}/api/ingest/v1/live`, hello with
 * the key, then fact frames as they are written, and pings, until the requested duration ends or
 * `stop_live_stream` arrives. Best effort: sync stays the record, and the tower deduplicates a fact
 * that comes both ways.
 */
export class LiveChannel {
  private socket: WebSocket | undefined
  private timers: NodeJS.Timeout[] = []
  private seq: string
  private reading = false
  private closed = false
  subscribed = false
  until: number

  constructor(
    private readonly opts: LiveChannelOptions,
    durationSec: number,
  ) {
    this.seq = opts.startSeq
    this.until = Date.now() + durationSec * 1000
  }

  /** Extends (or shortens) the channel to end `durationSec` from now. */
  extend(durationSec: number): void {
    this.until = Date.now() + durationSec * 1000
  }

  open(): void {
    const url = new URL(`${this.opts.towerUrl.replace(/\/+$/, '')}${INGEST_BASE_PATH}/live`)
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:'
    const socket = new (loadWs())(url)
    this.socket = socket
    socket.on('open', () => {
      socket.send(JSON.stringify({ type: 'hello', protocolVersion: this.opts.protocolVersion, apiKey: this.opts.apiKey }))
    })
    socket.on('message', (data) => {
      let frame: { type?: string; subscribed?: boolean; code?: string; error?: string }
      try {
        frame = JSON.parse(data.toString())
      } catch {
        return
      }
      if (frame.type === 'ack') {
        this.subscribed = frame.subscribed === true
        if (!this.subscribed) return this.close('not subscribed')
        this.opts.log.info({ until: new Date(this.until).toISOString() }, 'tower live channel open')
        this.timers.push(setInterval(() => void this.pump(), this.opts.pollMs))
        this.timers.push(setInterval(() => this.sendFrame({ type: 'ping' }), this.opts.pingMs))
        void this.pump()
      } else if (frame.type === 'error') {
        this.opts.log.warn({ code: frame.code, error: frame.error }, 'tower live channel error')
      }
    })
    socket.on('error', (err) => this.opts.log.warn({ err: { message: err.message } }, 'tower live channel failed'))
    socket.on('close', () => this.finish())
    const ender = setInterval(
      () => {
        if (Date.now() >= this.until) this.close('duration over')
      },
      Math.min(1000, Math.max(50, this.until - Date.now())),
    )
    this.timers.push(ender)
  }

  private sendFrame(frame: unknown): void {
    const s = this.socket
    if (s && s.readyState === s.OPEN) s.send(JSON.stringify(frame))
  }

  private async pump(): Promise<void> {
    if (this.reading || this.closed || !this.subscribed) return
    this.reading = true
    try {
      for (;;) {
        const { facts, lastSeq } = await this.opts.readFacts(this.seq)
        if (lastSeq === null || this.closed) break
        for (const event of facts) this.sendFrame({ type: 'fact', event })
        this.seq = lastSeq
      }
    } catch (err) {
      this.opts.log.warn({ err: { message: (err as Error).message } }, 'tower live channel read failed')
    } finally {
      this.reading = false
    }
  }

  close(reason: string): void {
    if (this.closed) return
    this.opts.log.info({ reason }, 'tower live channel closing')
    this.closed = true
    for (const t of this.timers) clearInterval(t)
    this.timers = []
    const s = this.socket
    if (s && (s.readyState === s.OPEN || s.readyState === s.CONNECTING)) s.close(1000, reason)
    this.finish()
  }

  private finish(): void {
    this.closed = true
    for (const t of this.timers) clearInterval(t)
    this.timers = []
    if (this.socket) {
      this.socket.removeAllListeners('close')
      this.socket = undefined
      this.opts.onClose()
    }
  }

  get isOpen(): boolean {
    return !this.closed
  }
}
