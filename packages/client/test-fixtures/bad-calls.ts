// Must NOT compile under tsc --strict: each line marked `// error` is a mistake the types catch
// (packages/client/test/types.test.ts checks that tsc reports exactly those lines).
import { createSlawClient } from '@slaw/client'

const client = createSlawClient({ baseUrl: 'http://127.0.0.1:3100', token: 'slaw_op_x' })

export async function bad(squadId: string) {
  await client.POST('/api/squads/{squadId}/issues', { params: { path: { squadId } }, body: { titel: 'misspelled field' } }) // error
  await client.POST('/api/squads/{squadId}/issues', { params: { path: { squadId } }, body: { title: 42 } }) // error
  await client.POST('/api/squads/{squadId}/issues', { params: { path: { squadId } }, body: { title: 'x', priority: 'urgent' } }) // error
  await client.GET('/api/squads/{squadId}/isues', { params: { path: { squadId } } }) // error
  await client.GET('/api/issues/{id}', { params: { path: { issueId: 'x' } } }) // error
  const got = await client.GET('/api/issues/{id}', { params: { path: { id: 'x' } } })
  const wrong: number = got.data!.issue.title // error
  const code: number = got.error!.code // error
  await client.checkout('issue', { agent: 'x' }) // error
  for await (const e of client.events('squad', { types: ['issue.creatd'] })) void e // error
  for await (const e of client.events('squad')) if (e.type === 'cost.recorded') void (e.data.costCents satisfies string | undefined) // error
  void wrong
  void code
}
