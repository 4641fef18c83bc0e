// A second node for the kill -9 test: an instance on the given PostgreSQL database whose adapter
// announces each wake on stdout and then hangs, so the parent can kill the process mid-run.
import { createInstance, type AgentAdapter } from '@slaw/core'
import { pgStorage } from '@slaw/storage-pg'

const url = process.argv[2]!
const hang: AgentAdapter = {
  type: 'process',
  wake: (input) => {
    process.stdout.write(`RUNNING ${input.runId}\n`)
    return new Promise(() => undefined)
  },
}
const instance = await createInstance({
  storage: pgStorage({ url, max: 2 }),
  adapters: [hang],
  operatorKey: 'slaw_op_run_node_0123456789abcdef',
  masterKey: '5a'.repeat(32),
  jobs: { pollIntervalMs: 50 },
  logger: false,
})
await instance.ready()
process.stdout.write('READY\n')
