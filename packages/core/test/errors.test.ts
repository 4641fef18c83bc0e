import t from 'tap'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { SlawError, errorCodes, type ErrorCode } from '../src/errors.js'

const docPath = fileURLToPath(new URL('../../../docs/errors.md', import.meta.url))
const doc = readFileSync(docPath, 'utf8')

/** The table rows of docs/errors.md: | `code` | status | meaning | */
const documented = new Map<string, { status: number; meaning: string }>()
const duplicates: string[] = []
for (const line of doc.split('\n')) {
  const m = /^\| `([a-z0-9_]+)` \| (\d{3}) \| (.+) \|\s*$/.exec(line)
  if (!m) continue
  if (documented.has(m[1]!)) duplicates.push(m[1]!)
  documented.set(m[1]!, { status: Number(m[2]), meaning: m[3]!.trim() })
}

t.test('docs/errors.md and the registry stay in step', async (t) => {
  const registry = Object.entries(errorCodes) as Array<[ErrorCode, { status: number; message: string }]>
  t.ok(documented.size >= 20, `docs/errors.md has a table (${documented.size} rows)`)
  t.same(duplicates, [], 'each code is documented once')
  t.same([...documented.keys()].sort(), registry.map(([code]) => code).sort(), 'the same codes in both')
  for (const [code, entry] of registry) {
    t.equal(documented.get(code)?.status, entry.status, `${code}: same status`)
    t.ok((documented.get(code)?.meaning.length ?? 0) > 20, `${code}: its meaning is explained`)
  }
})

t.test('registry entries are well-formed', async (t) => {
  for (const [code, entry] of Object.entries(errorCodes)) {
    t.match(code, /^[a-z][a-z0-9_]*$/, `${code} is snake_case`)
    t.ok(entry.status >= 400 && entry.status <= 599, `${code}: an error status`)
    t.match(entry.message, /^[A-Z].*\.$/, `${code}: the default message is a sentence`)
    const err = new SlawError(code as ErrorCode)
    t.same([err.statusCode, err.code, err.message], [entry.status, code, entry.message])
    t.same(err.toJSON(), { error: entry.message, code }, `${code}: body without details`)
  }
  const withDetails = new SlawError('invalid_payload', 'Bad title.', [{ path: '/title', message: 'must be string' }])
  t.same(withDetails.toJSON(), { error: 'Bad title.', code: 'invalid_payload', details: [{ path: '/title', message: 'must be string' }] })
})

t.test('the documented codes have the statuses docs/errors.md gives them', async (t) => {
  const decided: Record<string, number> = {
    unauthorized: 401,
    forbidden: 403,
    not_found: 404,
    invalid_payload: 400,
    invalid_state: 422,
    rate_limited: 429,
    payload_too_large: 413,
    issue_checked_out: 409,
    project_paused: 409,
    budget_exhausted: 409,
    tower_limit_reached: 409,
    slug_taken: 409,
    agent_name_taken: 409,
    squad_archived: 409,
    revision_conflict: 409,
    skills_managed_by_tower: 409,
    agent_not_active: 409,
    sensitive_config_rejected: 400,
    instance_not_enrolled: 403,
  }
  for (const [code, status] of Object.entries(decided)) t.equal((errorCodes as Record<string, { status: number }>)[code]?.status, status, code)
})
