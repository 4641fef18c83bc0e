import t from 'tap'
import { FormatRegistry, type Static, type StaticDecode } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { IssueRecord, type Issue } from '../src/records.js'
import { DateTime } from '../src/records/fields.js'
import { AgentPeerSchema, AgentSchema, KeySchema } from '../src/schemas/agents.js'
import { IssueSchema, presentIssue } from '../src/schemas/issues.js'
import { RoutineTriggerSchema } from '../src/schemas/routine-triggers.js'
import { HeartbeatRunSchema } from '../src/schemas/runs.js'
import { SecretSchema } from '../src/schemas/secrets.js'

// Records are TypeBox schemas (docs/records.md): decoded, timestamps are Dates; encoded (the API's
// JSON), ISO strings. These checks fail to compile when that stops being true.
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false
const typeIs = <T extends true>(): T => true as T
typeIs<Equals<StaticDecode<typeof DateTime>, Date>>()
typeIs<Equals<Static<typeof DateTime>, string>>()
typeIs<Equals<Issue['checkedOutAt'], Date | null>>()
typeIs<Equals<Static<typeof IssueSchema>['checkedOutAt'], string | null>>()
typeIs<Equals<Issue['status'], 'backlog' | 'todo' | 'in_progress' | 'in_review' | 'blocked' | 'done' | 'cancelled'>>()

const issue: Issue = {
  id: '0190d5c8-5c8a-7c8a-8c8a-5c8a5c8a5c8a',
  squadId: '0190d5c8-5c8a-7c8a-8c8a-5c8a5c8a5c8b',
  number: 7,
  identifier: 'ENG-7',
  title: 'A title',
  description: null,
  status: 'todo',
  priority: 'medium',
  assigneeAgentId: null,
  assigneeUserId: null,
  checkoutAgentId: null,
  checkedOutAt: new Date('2026-01-02T03:04:05.678Z'),
  parentId: null,
  goalId: null,
  projectId: null,
  billingCode: null,
  createdAt: new Date('2026-01-01T00:00:00.000Z'),
  updatedAt: new Date('2026-01-02T00:00:00.000Z'),
}

t.test('a timestamp is a date-time string in JSON Schema', async (t) => {
  t.same(JSON.parse(JSON.stringify(DateTime)), { type: 'string', format: 'date-time' })
})

t.test('a record encodes to the JSON the API answers, and decodes back', async (t) => {
  // Value checks formats; the app leaves them to ajv, so they are only registered here.
  FormatRegistry.Set('uuid', (v) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v))
  FormatRegistry.Set('date-time', (v) => !Number.isNaN(Date.parse(v)))
  const encoded = Value.Encode(IssueRecord, issue)
  t.same(presentIssue(issue), encoded, 'the presenter turns the record into its encoded form (IssueSchema then leaves the number out)')
  t.same(Value.Decode(IssueRecord, encoded), issue)
})

t.test('responses cut from records leave secrets and internals out', async (t) => {
  const fields = (schema: { properties: object }): string[] => Object.keys(schema.properties)
  const required = (schema: { required?: unknown }): unknown[] => (Array.isArray(schema.required) ? schema.required : [])
  t.notOk(
    fields(RoutineTriggerSchema).some((f) => /^secret(Hash|Ciphertext)$/.test(f)),
    'a trigger shows no secret hash or ciphertext',
  )
  t.notOk(fields(AgentPeerSchema).includes('adapterConfig'), 'a peer sees no adapter config')
  t.notOk(required(AgentSchema).includes('adapterConfig'), 'the adapter config is optional (operator only)')
  t.notOk(fields(AgentSchema).includes('runtimeState'), 'the runtime state has its own endpoint')
  t.notOk(fields(KeySchema).includes('tokenHash'), 'a key shows no token hash')
  t.notOk(required(HeartbeatRunSchema).includes('outputTail'), 'the output tail is optional (operator only)')
  t.notOk(
    fields(SecretSchema).some((f) => ['value', 'ref'].includes(f)),
    'a secret shows no value or reference',
  )
})
