import t, { type Test } from 'tap'
import { mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { adapterContract, playContractAgent, type AdapterScenario } from '@slaw/core/testing'
import { serveSpool, spoolAdapter } from '../src/index.js'

/** A spool directory with one queue and a worker that plays the kit's well-behaved agent. */
async function spool(t: Test) {
  const dir = await mkdtemp(join(tmpdir(), 'slaw-spool-'))
  const queueDir = join(dir, 'contract')
  await mkdir(queueDir)
  const worker = serveSpool({
    queueDir,
    handle: (job, signal) => playContractAgent(job.task as AdapterScenario, job.env, { signal }),
  })
  t.teardown(async () => {
    await worker.close()
    await rm(dir, { recursive: true, force: true })
  })
  return { dir, queueDir }
}

t.test('spoolAdapter keeps the adapter contract', async (t) => {
  const { dir } = await spool(t)
  await adapterContract(t, () => spoolAdapter({ dir }), {
    configFor: (scenario) => (scenario.kind === 'unreachable' ? { queue: 'nobody-serves-this' } : { queue: 'contract', task: scenario }),
    invalidConfigs: [{}, { queue: '../etc' }, { queue: 42 }],
    maxOutputBytes: 16 * 1024,
  })
})

t.test('the job file is private to its owner and nothing of a run is left behind', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'slaw-spool-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const queueDir = join(dir, 'q')
  await mkdir(queueDir)
  let mode = 0
  const worker = serveSpool({
    queueDir,
    handle: async (job) => {
      mode = (await stat(join(queueDir, `${job.runId}.claimed.json`))).mode & 0o777
      return { ok: true, exitCode: 0, output: job.env.GREETING ?? '' }
    },
  })
  t.teardown(() => worker.close())
  const adapter = spoolAdapter({ dir })
  const result = await adapter.wake({
    runId: 'run-1',
    agentId: 'a',
    squadId: 's',
    issueId: null,
    reason: 'manual',
    env: { GREETING: 'hello' },
    config: { queue: 'q' },
    timeoutMs: 60_000,
    graceMs: 1_000,
    signal: new AbortController().signal,
  })
  t.same(result, { status: 'succeeded', exitCode: 0, output: 'hello' })
  t.equal(mode, 0o600, 'only the owner may read the job (it holds the run token)')
  t.same(await readdir(queueDir), [], 'the job, claim and result files are gone')
})
