import { createServer, type Socket } from 'node:net'
import { randomUUID } from 'node:crypto'
import { createServer as createHttpServer } from 'node:http'
import type { AdapterWakeInput } from '@slaw/core'
import { playContractAgent, type AdapterScenario } from '@slaw/core/testing'
import type { HttpWakeBody } from '@slaw/adapters'

/** A wake input with the wake variables filled in; override what a test needs. */
export function wakeInput(overrides: Partial<AdapterWakeInput> = {}): AdapterWakeInput {
  const runId = randomUUID()
  return {
    runId,
    agentId: randomUUID(),
    squadId: randomUUID(),
    issueId: null,
    reason: 'test',
    env: { SVC_RUN_ID: runId, SVC_API_KEY: `run-token-${randomUUID()}`, SVC_API_URL: 'http://127.0.0.1:1' },
    config: {},
    timeoutMs: 60_000,
    graceMs: 1_000,
    signal: new AbortController().signal,
    ...overrides,
  }
}

/**
 * A socket server that test agents connect to and name themselves on ("child\n"). Because the kernel
 * closes a dead process's sockets, a closed connection proves that process is gone, with no clock.
 * A connection saying "ask" gets the names of the holders still connected.
 */
export async function holdServer(): Promise<{ port: number; opened(name: string): Promise<void>; closed(name: string): Promise<void>; isOpen(name: string): boolean; close(): Promise<void> }> {
  const open = new Map<string, Socket>()
  const waiters: Array<() => void> = []
  const closedNames = new Set<string>()
  const sockets = new Set<Socket>()
  const notify = (): void => {
    for (const w of waiters.splice(0)) w()
  }
  const server = createServer((socket) => {
    sockets.add(socket)
    let buf = ''
    socket.on('data', (chunk) => {
      buf += chunk.toString()
      if (!buf.includes('\n')) return
      const name = buf.trim()
      if (name === 'ask') {
        socket.end([...open.keys()].join(','))
        return
      }
      open.set(name, socket)
      socket.on('close', () => {
        open.delete(name)
        closedNames.add(name)
        notify()
      })
      notify()
    })
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const until = async (cond: () => boolean): Promise<void> => {
    while (!cond()) await new Promise<void>((r) => waiters.push(r))
  }
  return {
    port: (server.address() as { port: number }).port,
    opened: (name) => until(() => open.has(name) || closedNames.has(name)),
    closed: (name) => until(() => closedNames.has(name)),
    isOpen: (name) => open.has(name),
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
}

/**
 * A well-behaved http agent for the contract kit: the scenario rides in the URL `configFor` returns,
 * and a closed wake connection stops a hanging agent.
 */
export async function contractReceiver(t: { teardown(fn: () => unknown): unknown }): Promise<{ configFor(scenario: AdapterScenario): Record<string, unknown> }> {
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      // Only wakes from the kit carry a scenario. Anything else is a stray request: another test's
      // health poll that picked this port as free just before this server took it (seen in CI).
      let scenario: AdapterScenario
      let body: HttpWakeBody
      try {
        scenario = JSON.parse(decodeURIComponent(req.url!.slice(1))) as AdapterScenario
        body = JSON.parse(Buffer.concat(chunks).toString()) as HttpWakeBody
      } catch {
        res.writeHead(404).end()
        return
      }
      const stopped = new AbortController()
      res.on('close', () => stopped.abort())
      void playContractAgent(scenario, body.env, { signal: stopped.signal }).then((outcome) => {
        if (!res.destroyed) res.writeHead(outcome.ok ? 200 : 500).end(outcome.output)
      })
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  return {
    // Port 1 is privileged and unused: connecting to it is refused.
    configFor: (scenario) => ({ url: scenario.kind === 'unreachable' ? 'http://127.0.0.1:1/' : `${base}/${encodeURIComponent(JSON.stringify(scenario))}` }),
  }
}
