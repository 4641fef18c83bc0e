import type { Fact } from '@slaw/core/ingest'
import { LiveChannel } from './live.js'
import type { Reporter } from './reporter.js'
import { toWire } from './wire.js'

/** Where the live channel connects: the tower in effect and this instance's key, when it has one. */
export type LiveTarget = () => { url: string; apiKey: string } | undefined

/**
 * The live channel the tower asks for (`request_live_stream`): opened only with `liveStream` on,
 * extended when asked again, streaming the outbox's facts as they are written.
 */
export class LiveControl {
  private live: LiveChannel | undefined

  constructor(
    private readonly r: Reporter,
    private readonly target: LiveTarget,
  ) {}

  get isOpen(): boolean {
    return !!this.live?.isOpen
  }

  open(durationSec: number): void {
    const { ctx, options } = this.r
    if (!options.liveStream) {
      ctx.log.info({}, 'the tower asked for a live stream; liveStream is off on this instance')
      return
    }
    if (this.live?.isOpen) {
      this.live.extend(durationSec)
      return
    }
    const target = this.target()
    if (!target) return
    const live = new LiveChannel(
      {
        towerUrl: target.url,
        apiKey: target.apiKey,
        protocolVersion: options.protocolVersion,
        pingMs: options.livePingMs,
        pollMs: options.livePollMs,
        startSeq: this.r.store.data.cursor ?? '0',
        log: ctx.log,
        readFacts: (afterSeq) => this.factsAfter(afterSeq),
        onClose: () => {
          if (this.live === live) this.live = undefined
        },
      },
      durationSec,
    )
    this.live = live
    live.open()
  }

  close(reason: string): void {
    this.live?.close(reason)
    this.live = undefined
  }

  private async factsAfter(afterSeq: string): Promise<{ facts: Fact[]; lastSeq: string | null }> {
    const rows = await this.r.ctx.storage.outbox.readAfter(afterSeq, 500)
    const facts: Fact[] = []
    for (const row of rows) {
      if (row.kind !== 'fact') continue
      const item = toWire('fact', row.payload, this.r.wire)
      if (!('skip' in item) && item.kind === 'fact') facts.push(item.value)
    }
    return { facts, lastSeq: rows.length ? rows[rows.length - 1]!.seq : null }
  }
}
