import { mkdtemp, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import type { AdapterWakeInput } from '@slaw/core'

export const standIn = fileURLToPath(new URL('./fixtures/codex', import.meta.url))
export const fixturesDir = fileURLToPath(new URL('./fixtures', import.meta.url))

/** A scratch directory for one test: the stand-in's records and the agent's cwd. */
export async function scratch(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'slaw-codex-'))
}

/** What the stand-in recorded, one entry per start. */
export async function calls(dir: string): Promise<Array<{ argv: string[]; stdin: string; env: Record<string, string> }>> {
  const text = await readFile(join(dir, 'calls.jsonl'), 'utf8').catch(() => '')
  return text.trim()
    ? text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
    : []
}

export function wakeInput(dir: string, scenario: string, overrides: Partial<AdapterWakeInput> = {}, config: Record<string, unknown> = {}): AdapterWakeInput {
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
