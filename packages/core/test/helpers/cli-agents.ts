import { fileURLToPath } from 'node:url'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { processAdapter } from '@slaw/adapters'
import { claudeAdapter } from '@slaw/adapter-claude'
import { codexAdapter } from '@slaw/adapter-codex'
import type { TestApi } from './instance.js'
import { finished } from './runs.js'

// The real claude_local and codex_local adapters, driven end to end (createInstance + HTTP) against
// the stand-in CLIs of their packages, which replay recorded event streams.
export const claude = fileURLToPath(new URL('../../../adapter-claude/test/fixtures/claude', import.meta.url))
export const codex = fileURLToPath(new URL('../../../adapter-codex/test/fixtures/codex', import.meta.url))
export const cliAdapters = () => ({ adapters: [processAdapter(), claudeAdapter({ lingerMs: 200 }), codexAdapter()], runs: { upstreamRetryBaseMs: 1_000 } })

/** What a stand-in CLI recorded, one entry per start. */
export const calls = (dir: string): Array<{ argv: string[]; stdin: string; env: Record<string, string> }> => {
  try {
    return readFileSync(join(dir, 'calls.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
  } catch {
    return []
  }
}

export async function cliAgent(api: TestApi, squadId: string, name: string, adapterType: string, adapterConfig: Record<string, unknown>): Promise<{ id: string }> {
  const res = await api.call('POST', `/api/squads/${squadId}/agents`, { name, role: 'software_engineer', adapterType, adapterConfig })
  if (res.status !== 201) throw new Error(`agent: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.agent
}

/** Wakes the agent and waits until the run ends. */
export async function wakeAndFinish(api: TestApi, agentId: string, issueId?: string): Promise<any> {
  const res = await api.call('POST', `/api/agents/${agentId}/wake`, issueId ? { issueId } : {})
  if (res.status !== 202) throw new Error(`wake: ${res.status} ${JSON.stringify(res.body)}`)
  return finished(api.call, res.body.run.id)
}
