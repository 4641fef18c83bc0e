/** Default size of the output an adapter keeps for the operator: the last 64 KiB. */
export const defaultOutputTailBytes = 64 * 1024

/**
 * Keeps the last `limit` bytes of a stream of chunks, however much is written: memory stays within
 * about `limit` plus one chunk. Agents can print megabytes; the operator needs the end.
 */
export class OutputTail {
  private chunks: Buffer[] = []
  private size = 0
  /** Bytes written in all, kept or not. */
  total = 0

  constructor(private readonly limit: number) {}

  /** Bytes held in memory right now: under `limit` plus one chunk. */
  get retained(): number {
    return this.size
  }

  write(chunk: Buffer | string): void {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
    this.total += buf.length
    if (buf.length >= this.limit) {
      this.chunks = [buf.subarray(buf.length - this.limit)]
      this.size = this.limit
      return
    }
    this.chunks.push(buf)
    this.size += buf.length
    while (this.size - this.chunks[0]!.length >= this.limit) this.size -= this.chunks.shift()!.length
  }

  /** The kept tail as text. A character cut in half at the start is dropped, not mangled. */
  text(): string {
    const all = Buffer.concat(this.chunks)
    const tail = all.subarray(Math.max(0, all.length - this.limit))
    let start = 0
    // Skip UTF-8 continuation bytes (10xxxxxx) left over from a character the cut split.
    while (start < tail.length && start < 4 && (tail[start]! & 0xc0) === 0x80) start += 1
    return tail.subarray(start).toString('utf8')
  }
}
