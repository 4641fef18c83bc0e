import { spawn } from 'node:child_process'
import type { AdapterWakeInput, AdapterWakeResult, AgentAdapter } from '@slaw/core'

export interface ProcessAdapterOptions {
  /** Default command when an agent's adapter config names none. */
  command?: string
  args?: string[]
  /** Kill the process after this long. Default 30 minutes. */
  timeoutMs?: number
  /** Environment passed through from this process besides the SVC_* wake variables. Default: PATH, HOME, LANG. */
  passEnv?: string[]
}

/**
 * Wakes an agent by starting a local command with the wake variables (SVC_API_KEY, SVC_RUN_ID, …)
 * in its environment. If the last line the process prints is JSON with `usage` and/or `liveness`,
 * it is reported back. Agent config: `{ command, args?, cwd? }`.
 */
export function processAdapter(options: ProcessAdapterOptions = {}): AgentAdapter {
  const timeoutMs = options.timeoutMs ?? 30 * 60_000
  const passEnv = options.passEnv ?? ['PATH', 'HOME', 'LANG']
  return {
    type: 'process',
    wake(input: AdapterWakeInput): Promise<AdapterWakeResult> {
      const command = typeof input.config.command === 'string' ? input.config.command : options.command
      if (!command) return Promise.resolve({ status: 'failed', error: 'process adapter: no command configured' })
      const args = Array.isArray(input.config.args) ? input.config.args.map(String) : (options.args ?? [])
      const env: Record<string, string> = {}
      for (const k of passEnv) if (process.env[k] !== undefined) env[k] = process.env[k]!
      Object.assign(env, input.env)
      return new Promise((resolve) => {
        const child = spawn(command, args, {
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
          ...(typeof input.config.cwd === 'string' ? { cwd: input.config.cwd } : {}),
          signal: input.signal,
          timeout: timeoutMs,
        })
        let tail = ''
        child.stdout.on('data', (chunk: Buffer) => {
          // Keep only the end of the output: the report is the last line; run output stays local.
          tail = (tail + chunk.toString('utf8')).slice(-16_384)
        })
        child.stderr.resume()
        child.on('error', (err) => resolve({ status: input.signal.aborted ? 'cancelled' : 'failed', error: err.message }))
        child.on('close', (code) => {
          if (input.signal.aborted) return resolve({ status: 'cancelled' })
          const report = parseReport(tail)
          resolve({ status: code === 0 ? 'succeeded' : 'failed', ...report, ...(code === 0 ? {} : { error: `exit code ${code}` }) })
        })
      })
    },
  } satisfies AgentAdapter
}

function parseReport(output: string): Pick<AdapterWakeResult, 'usage' | 'liveness'> {
  const last = output.trim().split('\n').pop()
  if (!last?.startsWith('{')) return {}
  try {
    const parsed = JSON.parse(last) as Pick<AdapterWakeResult, 'usage' | 'liveness'>
    return { ...(parsed.usage ? { usage: parsed.usage } : {}), ...(parsed.liveness ? { liveness: parsed.liveness } : {}) }
  } catch {
    return {}
  }
}
