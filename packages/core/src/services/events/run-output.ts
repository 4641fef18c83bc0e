import type { NewRunOutputChunk, Storage } from '../../contracts/storage.js'
import type { RunOutputEvent } from '../runs/run-engine.js'
import { detached } from '../foundation/detached.js'

export interface RunOutputOptions {
  /** One write (and so one batch of `run.output` events) per run at most this often. Default 250 ms. */
  flushMs?: number
  /** Largest chunk (one event) in characters. Default 16 KiB. */
  maxChunkChars?: number
  /**
   * Output of one run waiting for its next write, in characters; past it the oldest waiting text is
   * dropped from the live stream (the run's final output tail still has the end). Default 64 KiB.
   */
  maxPendingChars?: number
  /** The tail each run keeps for the output route. Default 64 KiB. */
  keepChars?: number
}

interface Pending {
  squadId: string
  agentId: string
  pieces: Array<{ stream: 'stdout' | 'stderr'; text: string }>
  chars: number
  timer: NodeJS.Timeout | undefined
  lastFlush: number
  writing: Promise<void> | undefined
}

/**
 * Turns the live output of the runs this node executes (the engine's `onRunOutput`, already
 * scrubbed of bound secret values) into stored chunks: throttled to one write per run every
 * `flushMs`, each chunk one `run.output` event on every node, and the last `keepChars` kept for the
 * output route while the run goes on.
 */
export class RunOutputRecorder {
  private readonly flushMs: number
  private readonly maxChunkChars: number
  private readonly maxPendingChars: number
  readonly keepChars: number
  private readonly pending = new Map<string, Pending>()
  /** Characters written so far per run and stream: each chunk's offset. */
  private readonly offsets = new Map<string, { stdout: number; stderr: number; issueId: string | null | undefined; seen: number }>()
  private calls = 0
  private closed = false

  constructor(
    private readonly storage: Storage,
    options: RunOutputOptions = {},
    private readonly log: { warn(obj: object, msg: string): void } = { warn: () => undefined },
  ) {
    this.flushMs = options.flushMs ?? 250
    this.maxChunkChars = options.maxChunkChars ?? 16 * 1024
    this.maxPendingChars = options.maxPendingChars ?? 64 * 1024
    this.keepChars = options.keepChars ?? 64 * 1024
  }

  /** The engine's listener: must be quick and never throw. */
  readonly onOutput = (e: RunOutputEvent): void => {
    if (this.closed || !e.text) return
    // Runs that went quiet long ago are forgotten (their offsets would start again at 0).
    if (++this.calls % 1000 === 0) this.sweep()
    let p = this.pending.get(e.runId)
    if (!p) this.pending.set(e.runId, (p = { squadId: e.squadId, agentId: e.agentId, pieces: [], chars: 0, timer: undefined, lastFlush: 0, writing: undefined }))
    const last = p.pieces[p.pieces.length - 1]
    if (last && last.stream === e.stream) last.text += e.text
    else p.pieces.push({ stream: e.stream, text: e.text })
    p.chars += e.text.length
    // Bounded: a run that writes faster than it is stored loses its oldest waiting text, not memory.
    while (p.chars > this.maxPendingChars && p.pieces.length) {
      const first = p.pieces[0]!
      const over = p.chars - this.maxPendingChars
      if (first.text.length <= over) {
        p.pieces.shift()
        p.chars -= first.text.length
        this.advance(e.runId, first.stream, first.text.length)
      } else {
        first.text = first.text.slice(over)
        p.chars -= over
        this.advance(e.runId, first.stream, over)
      }
    }
    if (!p.timer) {
      const wait = Math.max(0, p.lastFlush + this.flushMs - Date.now())
      // The adapter's data handler may run inside a transaction's context: the write starts detached.
      p.timer = setTimeout(
        detached(() => void this.flush(e.runId)),
        wait,
      )
      p.timer.unref()
    }
  }

  /** Writes what a run has waiting (the engine calls nothing here; the timer does). */
  private async flush(runId: string): Promise<void> {
    const p = this.pending.get(runId)
    if (!p) return
    p.timer = undefined
    if (p.writing) {
      // One write per run at a time: the next goes after this one.
      await p.writing
      if (!p.timer && p.pieces.length) p.timer = setTimeout(() => void this.flush(runId), 0)
      return
    }
    const pieces = p.pieces.splice(0)
    p.chars = 0
    p.lastFlush = Date.now()
    if (!pieces.length) {
      this.pending.delete(runId)
      return
    }
    p.writing = this.write(runId, p, pieces).finally(() => {
      p.writing = undefined
      if (!p.pieces.length && !p.timer) this.pending.delete(runId)
    })
    await p.writing
  }

  private async write(runId: string, p: Pending, pieces: Pending['pieces']): Promise<void> {
    try {
      const state = await this.state(runId)
      const chunks: NewRunOutputChunk[] = []
      for (const piece of pieces) {
        for (let i = 0; i < piece.text.length; i += this.maxChunkChars) {
          const text = piece.text.slice(i, i + this.maxChunkChars)
          chunks.push({ runId, squadId: p.squadId, agentId: p.agentId, issueId: state.issueId ?? null, stream: piece.stream, text, offset: state[piece.stream] })
          state[piece.stream] += text.length
        }
      }
      // In a transaction: its commit wakes this node's streams and the other nodes'.
      await this.storage.transaction(async () => {
        await this.storage.runOutput.append(chunks, this.keepChars)
      })
    } catch (err) {
      this.log.warn({ err, runId }, 'live output: a chunk could not be stored; the run goes on')
    }
  }

  private async state(runId: string) {
    let s = this.offsets.get(runId)
    if (!s) this.offsets.set(runId, (s = { stdout: 0, stderr: 0, issueId: undefined, seen: Date.now() }))
    s.seen = Date.now()
    if (s.issueId === undefined) s.issueId = (await this.storage.heartbeatRuns.get(runId))?.issueId ?? null
    return s
  }

  private advance(runId: string, stream: 'stdout' | 'stderr', chars: number): void {
    let s = this.offsets.get(runId)
    if (!s) this.offsets.set(runId, (s = { stdout: 0, stderr: 0, issueId: undefined, seen: Date.now() }))
    s[stream] += chars
  }

  private sweep(): void {
    const before = Date.now() - 30 * 60_000
    for (const [runId, s] of this.offsets) if (s.seen < before && !this.pending.has(runId)) this.offsets.delete(runId)
  }

  /** A run ended: write what it has waiting now, and forget it. */
  async ended(runId: string): Promise<void> {
    const p = this.pending.get(runId)
    if (p?.timer) clearTimeout(p.timer)
    if (p) await this.flush(runId)
    await this.pending.get(runId)?.writing
    this.offsets.delete(runId)
  }

  /** Writes everything waiting, then takes no more (the instance is closing). */
  async close(): Promise<void> {
    this.closed = true
    await Promise.all([...this.pending.keys()].map((runId) => this.ended(runId)))
  }
}
