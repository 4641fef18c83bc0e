/** A job as the adapter writes it for a worker. `env` is the agent's whole environment. */
export interface SpoolJob {
  runId: string
  agentId: string
  squadId: string
  issueId: string | null
  reason: string
  /** The agent config's `task`, as the operator wrote it. */
  task: unknown
  env: Record<string, string>
}

/** What a worker writes back when the agent is done. */
export interface SpoolResult {
  ok: boolean
  exitCode: number
  output: string
}

// The files of one run inside its queue directory.
export const jobFile = (runId: string): string => `${runId}.job.json`
export const claimedFile = (runId: string): string => `${runId}.claimed.json`
export const resultFile = (runId: string): string => `${runId}.result.json`
export const stopFile = (runId: string): string => `${runId}.stop`
