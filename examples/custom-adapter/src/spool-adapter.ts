import { readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Type, defineAgentAdapter, type AdapterConfig, type AdapterWakeInput, type AdapterWakeResult, type AgentAdapter } from '@slaw/core'
import { claimedFile, jobFile, resultFile, stopFile, type SpoolJob, type SpoolResult } from './spool-files.js'

export interface SpoolAdapterOptions {
  /** The spool root; each queue is a directory under it that a worker serves. */
  dir: string
  /** How often a waiting wake looks for the worker's result, in ms. Default 25. */
  pollMs?: number
  /** How much of the worker's output a result keeps: the last N characters. Default 16 KiB. */
  outputTailChars?: number
}

const queueName = /^[a-z0-9][a-z0-9-]{0,62}$/

/**
 * An agent's config: the queue whose worker serves it, and a `task` handed to the worker as is (any
 * JSON; null when not set). `env`, `timeoutSec` and `graceSec` are slaw's own keys, allowed in every config.
 */
export const spoolConfigSchema = Type.Object({
  queue: Type.String({ pattern: queueName.source, errorMessage: 'queue must name a spool queue: lowercase letters, digits and dashes' }),
  task: Type.Unknown({ default: null }),
})

export type SpoolAgentConfig = AdapterConfig<typeof spoolConfigSchema>

/**
 * Wakes an agent by writing a job file into `<dir>/<queue>/` and waiting for the worker serving that
 * queue to write its result. Agent config: `{ queue, task? }`; `task` is handed to the worker as is.
 *
 * The job file holds the wake environment (the run token and resolved secrets), so it is written
 * with mode 0600 under a name the worker only sees once complete (write, then rename), and every file
 * of the run is removed when the wake ends. Past the timeout or on cancel the adapter drops a stop
 * file; the worker stops the agent and answers, or after `graceMs` the adapter gives up on it.
 */
export function spoolAdapter(options: SpoolAdapterOptions): AgentAdapter {
  const pollMs = options.pollMs ?? 25
  const tailChars = options.outputTailChars ?? 16 * 1024
  const closing = new AbortController()
  const pending = new Set<Promise<AdapterWakeResult>>()

  async function wake(input: AdapterWakeInput<SpoolAgentConfig>): Promise<AdapterWakeResult> {
    if (closing.signal.aborted) return { status: 'cancelled', error: 'the spool adapter is closed' }
    if (input.signal.aborted) return { status: 'cancelled', error: 'the run was cancelled before the job was written' }
    const { queue, task } = input.config
    const queueDir = join(options.dir, queue)
    if (!(await stat(queueDir).catch(() => null))?.isDirectory()) {
      return { status: 'failed', error: `no worker serves the queue "${queue}" (its spool directory is missing)` }
    }
    const job: SpoolJob = {
      runId: input.runId,
      agentId: input.agentId,
      squadId: input.squadId,
      issueId: input.issueId,
      reason: input.reason,
      task: task ?? null,
      env: input.env,
    }
    const files = {
      job: join(queueDir, jobFile(input.runId)),
      claimed: join(queueDir, claimedFile(input.runId)),
      result: join(queueDir, resultFile(input.runId)),
      stop: join(queueDir, stopFile(input.runId)),
    }
    await writeFile(`${files.job}.tmp`, JSON.stringify(job), { mode: 0o600 })
    await rename(`${files.job}.tmp`, files.job)
    try {
      return await waitForResult(input, files)
    } finally {
      await Promise.all([files.job, `${files.job}.tmp`, files.claimed, files.result, files.stop].map((f) => rm(f, { force: true })))
    }
  }

  async function waitForResult(input: AdapterWakeInput<unknown>, files: { result: string; stop: string }): Promise<AdapterWakeResult> {
    let stopping: { status: 'timed_out' | 'cancelled'; error: string } | null = null
    let giveUpAt = Infinity
    const deadline = Date.now() + input.timeoutMs
    for (;;) {
      const result = await readResult(files.result)
      if (result) {
        const output = result.output.slice(-tailChars)
        if (stopping) return { ...stopping, exitCode: result.exitCode, output }
        return result.ok ? { status: 'succeeded', exitCode: result.exitCode, output } : { status: 'failed', exitCode: result.exitCode, output, error: `the agent failed with code ${result.exitCode}` }
      }
      if (!stopping) {
        if (input.signal.aborted || closing.signal.aborted) stopping = { status: 'cancelled', error: 'the run was cancelled and the agent was asked to stop' }
        else if (Date.now() >= deadline) stopping = { status: 'timed_out', error: `the agent ran longer than its timeout (${input.timeoutMs} ms) and was asked to stop` }
        if (stopping) {
          await writeFile(files.stop, '')
          giveUpAt = Date.now() + input.graceMs
        }
      } else if (Date.now() >= giveUpAt) {
        return { ...stopping, error: `${stopping.error}; its worker did not answer within ${input.graceMs} ms` }
      }
      await sleep(pollMs, input.signal, closing.signal)
    }
  }

  return defineAgentAdapter({
    type: 'spool',
    configSchema: spoolConfigSchema,
    async wake(input) {
      const p = wake(input)
      pending.add(p)
      try {
        return await p
      } finally {
        pending.delete(p)
      }
    },
    async close() {
      closing.abort()
      await Promise.allSettled([...pending])
    },
  })
}

async function readResult(path: string): Promise<SpoolResult | null> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as SpoolResult
  } catch {
    // Not there yet (workers write it with a rename, so it is never half-written).
    return null
  }
}

/** Sleeps `ms`, waking early when either signal aborts. */
function sleep(ms: number, ...signals: AbortSignal[]): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer)
      for (const s of signals) s.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    for (const s of signals) s.addEventListener('abort', done, { once: true })
  })
}
