import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createTcpServer, type AddressInfo } from 'node:net'

/**
 * The plumbing of a stand-in: a local HTTP server that speaks a vendor's real wire protocol, so a
 * plugin is tested through its own client rather than against a mock of it. The protocol (routes,
 * auth, error bodies) is the stand-in's; listening, bodies, hanging and closing are here.
 */

/** Answers one request. It may be async: a throw or rejection is answered by `onError`. */
export type StandInHandler = (req: IncomingMessage, res: ServerResponse) => unknown

export interface StandInOptions {
  /**
   * Answers a request whose handler threw, in the vendor's own error shape.
   * Default: 500 `{"error": "<the error>"}`.
   */
  onError?: (res: ServerResponse, error: unknown) => void
}

export interface StandIn {
  /** `http://127.0.0.1:<port>`. */
  url: string
  /**
   * Leaves `req` unanswered, as a backend that hangs, until its client gives up and closes the
   * socket. For timeout tests: the plugin must abort the request, not only stop waiting for it.
   */
  hold(req: IncomingMessage): void
  /** Resolves once every request given to `hold` has been given up by its client. */
  hangingClosed(): Promise<void>
  /** Cuts every connection (held ones included) and stops listening. Safe to call again. */
  close(): Promise<void>
}

/**
 * Starts a stand-in on 127.0.0.1 and a free port:
 *
 * ```ts
 * const vault = await startStandIn(async (req, res) => {
 *   if (mode === 'hang') return vault.hold(req)
 *   const body = await readJson(req)
 *   sendJson(res, 200, { data: … })
 * })
 * t.teardown(() => vault.close())
 * ```
 */
export async function startStandIn(handler: StandInHandler, options: StandInOptions = {}): Promise<StandIn> {
  const onError = options.onError ?? ((res, error) => sendJson(res, 500, { error: String(error) }))
  const server = createServer((req, res) => {
    void (async () => handler(req, res))().catch((error: unknown) => {
      if (res.headersSent) res.destroy()
      else onError(res, error)
    })
  })

  let hanging = 0
  const idle: Array<() => void> = []
  let closing: Promise<void> | undefined

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    hold(req) {
      hanging += 1
      req.socket.once('close', () => {
        hanging -= 1
        if (hanging === 0) for (const wake of idle.splice(0)) wake()
      })
    },
    hangingClosed() {
      return hanging === 0 ? Promise.resolve() : new Promise<void>((resolve) => idle.push(resolve))
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
      return closing
    },
  }
}

/** The request's body as UTF-8 text (empty when it has none). */
export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

/** The request's body parsed as JSON; undefined when it has none. Malformed JSON throws a SyntaxError. */
export async function readJson(req: IncomingMessage): Promise<unknown> {
  const text = await readBody(req)
  return text ? JSON.parse(text) : undefined
}

/**
 * Answers `status` with `body` as JSON, or with no body when `body` is undefined (a 204).
 * `headers` are added, and may replace the `Content-Type` (`application/json`).
 */
export function sendJson(res: ServerResponse, status: number, body?: unknown, headers: Record<string, string | number> = {}): void {
  if (body === undefined) {
    res.writeHead(status, headers).end()
    return
  }
  const text = JSON.stringify(body)
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers }).end(text)
}

/**
 * A port on 127.0.0.1 that nothing listens on right now: the address of a backend that is down
 * (the plugin must answer "unavailable", promptly), or a port to start a real server on.
 */
export async function freePort(): Promise<number> {
  const server = createTcpServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}
