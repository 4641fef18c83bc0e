import { readdir, readFile, rename, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { claimedFile, resultFile, stopFile, type SpoolJob, type SpoolResult } from './spool-files.js'

export interface SpoolWorkerOptions {
  /** The queue directory this worker serves: `<spool dir>/<queue>`. */
  queueDir: string
  /**
   * Runs the agent for one job. `signal` aborts when the adapter asks the agent to stop (timeout or
   * cancel): stop it and return.
   */
  handle(job: SpoolJob, signal: AbortSignal): Promise<SpoolResult>
  /** How often the worker looks for jobs and stop files, in ms. Default 25. */
  pollMs?: number
}

/**
 * The other side of the spool adapter: claims job files (by renaming them, so two workers never take
 * one job), runs each, and writes its result. Runs until `close()`.
 */
export function serveSpool(options: SpoolWorkerOptions): { close(): Promise<void> } {
  const pollMs = options.pollMs ?? 25
  const running = new Map<string, { stop: AbortController; done: Promise<void> }>()
  let closed = false

  const runJob = async (runId: string): Promise<void> => {
    const claimed = join(options.queueDir, claimedFile(runId))
    const stop = new AbortController()
    const done = (async () => {
      const job = JSON.parse(await readFile(claimed, 'utf8')) as SpoolJob
      let result: SpoolResult
      try {
        result = await options.handle(job, stop.signal)
      } catch (err) {
        result = { ok: false, exitCode: 70, output: String(err) }
      }
      const target = join(options.queueDir, resultFile(runId))
      await writeFile(`${target}.tmp`, JSON.stringify(result), { mode: 0o600 })
      await rename(`${target}.tmp`, target)
    })().catch(() => {})
    running.set(runId, { stop, done })
    await done
    running.delete(runId)
  }

  const tick = async (): Promise<void> => {
    const names = await readdir(options.queueDir).catch(() => [] as string[])
    for (const name of names) {
      const match = /^(.+)\.job\.json$/.exec(name)
      if (!match) continue
      const runId = match[1]!
      // Claiming is a rename: exactly one worker wins it.
      const won = await rename(join(options.queueDir, name), join(options.queueDir, claimedFile(runId))).then(
        () => true,
        () => false,
      )
      if (won) void runJob(runId)
    }
    for (const [runId, job] of running) {
      if (
        await stat(join(options.queueDir, stopFile(runId))).then(
          () => true,
          () => false,
        )
      )
        job.stop.abort()
    }
  }

  const loop = (async () => {
    while (!closed) {
      await tick()
      await new Promise((r) => setTimeout(r, pollMs))
    }
  })()

  return {
    async close() {
      closed = true
      await loop
      for (const job of running.values()) job.stop.abort()
      await Promise.all([...running.values()].map((j) => j.done))
    },
  }
}
