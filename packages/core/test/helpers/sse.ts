import { request, type IncomingMessage } from 'node:http'

export interface SseMessage {
  event: string
  id: string | undefined
  data: any
}

/**
 * An open Server-Sent Events stream read with node:http (so a test can pause it like a slow
 * client, or destroy it mid-stream). Messages are parsed as they arrive; `next(n)` waits for them.
 */
export interface SseStream {
  status: number
  headers: IncomingMessage['headers']
  /** Every message received so far (comments excluded). */
  messages: SseMessage[]
  /** Comment lines received so far (keep-alives). */
  comments: string[]
  /** Resolves once `n` messages in all have arrived (rejects after `timeoutMs`). */
  next(n: number, timeoutMs?: number): Promise<SseMessage[]>
  /** Resolves when the server ended the stream. */
  ended: Promise<void>
  /** The body of a non-200 answer. */
  body: () => Promise<any>
  res: IncomingMessage
  close(): void
}

export function openSse(address: string, path: string, token: string, headers: Record<string, string> = {}): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const req = request(`${address}${path}`, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', ...headers } }, (res) => {
      const messages: SseMessage[] = []
      const comments: string[] = []
      const waiters: Array<() => void> = []
      let buffer = ''
      let raw = ''
      let endResolve!: () => void
      const ended = new Promise<void>((r) => (endResolve = r))
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        if (res.statusCode !== 200) {
          raw += chunk
          return
        }
        buffer += chunk
        let cut: number
        while ((cut = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, cut)
          buffer = buffer.slice(cut + 2)
          let event = 'message'
          let id: string | undefined
          const data: string[] = []
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line.slice(1).trim())
            else if (line.startsWith('event: ')) event = line.slice(7)
            else if (line.startsWith('id: ')) id = line.slice(4)
            else if (line.startsWith('data: ')) data.push(line.slice(6))
          }
          if (data.length) messages.push({ event, id, data: JSON.parse(data.join('\n')) })
        }
        for (const w of waiters.splice(0)) w()
      })
      res.on('end', () => {
        endResolve()
        for (const w of waiters.splice(0)) w()
      })
      res.on('close', () => {
        endResolve()
        for (const w of waiters.splice(0)) w()
      })
      const stream: SseStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        messages,
        comments,
        res,
        ended,
        async body() {
          await ended
          return JSON.parse(raw)
        },
        next(n, timeoutMs = 5000) {
          return new Promise((resolveNext, rejectNext) => {
            const deadline = setTimeout(() => rejectNext(new Error(`timed out waiting for ${n} messages; got ${messages.length}: ${messages.map((m) => m.event).join(', ')}`)), timeoutMs)
            const check = () => {
              if (messages.length >= n) {
                clearTimeout(deadline)
                resolveNext(messages.slice(0, n))
              } else if (res.complete || res.destroyed) {
                clearTimeout(deadline)
                rejectNext(new Error(`stream ended with ${messages.length} of ${n} messages: ${messages.map((m) => m.event).join(', ')}`))
              } else waiters.push(check)
            }
            check()
          })
        },
        close() {
          req.destroy()
          res.destroy()
        },
      }
      resolve(stream)
    })
    req.on('error', reject)
    req.end()
  })
}
