import t from 'tap'
import { processAdapter, httpAdapter } from '@slaw/adapters'
import { adapterContract, contractAgentSource } from '@slaw/core/testing'
import { contractReceiver } from './helpers.js'

t.test('processAdapter keeps the adapter contract', async (t) => {
  await adapterContract(t, () => processAdapter(), {
    configFor: (scenario) =>
      scenario.kind === 'unreachable' ? { command: '/nonexistent/contract-agent' } : { command: process.execPath, args: ['-e', contractAgentSource, JSON.stringify(scenario)] },
    invalidConfigs: [{}, { command: '' }, { command: 'node', args: 'not-an-array' }, { command: 'node', timeoutSec: 0 }],
  })
})

t.test('httpAdapter keeps the adapter contract', async (t) => {
  const receiver = await contractReceiver(t)
  await adapterContract(t, () => httpAdapter(), {
    acceptsRuns: true,
    configFor: receiver.configFor,
    invalidConfigs: [{}, { url: 'ftp://example.com' }, { url: 'http://x', headers: { 'X-Svc-Signature': 'x' } }],
  })
})
