// Compiles under tsc --strict: the calls bad-calls.ts gets wrong, written right.
import { createSlawClient, type Issue } from '@slaw/client'

const client = createSlawClient({ baseUrl: 'http://127.0.0.1:3100', token: 'slaw_op_x' })

export async function good(squadId: string, agentId: string): Promise<Issue | undefined> {
  const created = await client.POST('/api/squads/{squadId}/issues', { params: { path: { squadId } }, body: { title: 'typed', priority: 'high' } })
  if (created.error) return undefined
  const title: string = created.data.issue.title
  const checkout = await client.checkout(created.data.issue.id, { agentId })
  const list = await client.GET('/api/squads/{squadId}/issues', { params: { path: { squadId }, query: { status: 'todo', limit: 5 } } })
  const code: string | undefined = list.error?.code
  void title
  void code
  for await (const event of client.events(squadId, { types: ['run.*'] })) {
    if (event.type === 'run.output') {
      const text: string = event.data.text
      void text
    }
    if (event.type === 'cost.recorded') {
      const cents: number | null | undefined = event.data.costCents
      void cents
    }
    break
  }
  return checkout.data?.issue
}
