import { mkdtemp, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import type { AdapterWakeInput } from '@slaw/core'

/**
 * What the CLI adapters' tests (@slaw/adapter-claude, @slaw/adapter-codex) share: a stand-in script
 * for the CLI in the test's `fixtures/` folder, which records every start in `calls.jsonl` and plays
 * the scenario named by STANDIN_SCENARIO.
 */
export function cliStandIn(fixtures: URL, cli: string) {
  const fixturesDir = fileURLToPath(fixtures)
  const standIn = join(fixturesDir, cli)

  /** A scratch directory for one test: the stand-in's records and the agent's cwd. */
  const scratch = (): Promise<string> => mkdtemp(join(tmpdir(), `slaw-${cli}-`))

  /** What the stand-in recorded, one entry per start. */
  const calls = async (dir: string): Promise<Array<{ argv: string[]; stdin: string; env: Record<string, string> }>> => {
    const text = (await readFile(join(dir, 'calls.jsonl'), 'utf8').catch(() => '')).trim()
    return text ? text.split('\n').map((l) => JSON.parse(l)) : []
  }

  const wakeInput = (dir: string, scenario: string, overrides: Partial<AdapterWakeInput> = {}, config: Record<string, unknown> = {}): AdapterWakeInput => {
    const runId = randomUUID()
    return {
      runId,
      agentId: randomUUID(),
      squadId: randomUUID(),
      issueId: randomUUID(),
      reason: 'assignment',
      env: { SVC_RUN_ID: runId, SVC_API_KEY: `run-token-${runId}`, SVC_API_URL: 'http://127.0.0.1:1', STANDIN_DIR: dir, STANDIN_SCENARIO: scenario },
      config: { command: standIn, cwd: dir, ...config },
      timeoutMs: 60_000,
      graceMs: 1_000,
      signal: new AbortController().signal,
      ...overrides,
    }
  }

  /** Whether process `pid` (a child the stand-in left behind) has ended, within about five seconds. */
  const processGone = async (pid: number): Promise<boolean> => {
    for (let i = 0; i < 50; i++) {
      try {
        process.kill(pid, 0)
      } catch {
        return true
      }
      await new Promise((r) => setTimeout(r, 100))
    }
    return false
  }

  return { standIn, fixturesDir, scratch, calls, wakeInput, processGone }
}
