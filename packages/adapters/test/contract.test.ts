import t from 'tap'
import { createServer } from 'node:http'
import { processAdapter, httpAdapter, type HttpWakeBody } from '@slaw/adapters'
import { adapterContract, contractAgentSource, playContractAgent, type AdapterScenario } from '@slaw/core/testing'

t.test('processAdapter keeps the adapter contract', async (t) => {
  await adapterContract(t, () => processAdapter(), {
    configFor: (scenario) =>
      scenario.kind === 'unreachable'
        ? { command: '/nonexistent/contract-agent' }
        : { command: process.execPath, args: ['-e', contractAgentSource, JSON.stringify(scenario)] },
    invalidConfigs: [{}, { command: '' }, { command: 'node', args: 'not-an-array' }, { command: 'node', timeoutSec: 0 }],
  })
})

t.test('httpAdapter keeps the adapter contract', async (t) => {
  // The agent's endpoint: the scenario rides in the URL; a closed connection stops a hanging agent.
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const scenario = JSON.parse(decodeURIComponent(req.url!.slice(1))) as AdapterScenario
      const body = JSON.parse(Buffer.concat(chunks).toString()) as HttpWakeBody
      const stopped = new AbortController()
      res.on('close', () => stopped.abort())
      void playContractAgent(scenario, body.env, { signal: stopped.signal }).then((outcome) => {
        if (!res.destroyed) res.writeHead(outcome.ok ? 200 : 500).end(outcome.output)
      })
    })
  })
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r))
  t.teardown(() => {
    receiver.closeAllConnections()
    receiver.close()
  })
  const base = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`
  await adapterContract(t, () => httpAdapter(), {
    acceptsRuns: true,
    configFor: (scenario) => ({ url: scenario.kind === 'unreachable' ? 'http://127.0.0.1:1/' : `${base}/${encodeURIComponent(JSON.stringify(scenario))}` }),
    invalidConfigs: [{}, { url: 'ftp://example.com' }, { url: 'http://x', headers: { 'X-Svc-Signature': 'x' } }],
  })
})
