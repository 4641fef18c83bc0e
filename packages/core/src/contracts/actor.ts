/** Who is calling: resolved from the bearer token by the auth hook, or built by a host application. */
export type Actor = { type: 'operator'; keyId: string | null } | { type: 'agent'; agentId: string; squadId: string; keyId: string; runId: string | null } | { type: 'system'; id: string }
