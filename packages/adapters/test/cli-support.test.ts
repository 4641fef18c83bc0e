import t from 'tap'
import { randomUUID } from 'node:crypto'
import { defaultWakePromptTemplate, isTransientUpstream, renderWakePrompt, retryTimeFrom } from '@slaw/adapters'
import type { AdapterWakeInput } from '@slaw/core'

t.test('retryTimeFrom reads the time a rate-limited CLI names', async (t) => {
  const now = new Date(2026, 10, 28, 10, 0, 0) // local time: "4pm" is a local clock time
  t.equal(retryTimeFrom('Claude AI usage limit reached|1760000000', now)?.getTime(), 1_760_000_000_000, 'a |<unix seconds> suffix')
  t.equal(retryTimeFrom('try again at 2026-11-28T17:30:00Z', now)?.toISOString(), '2026-11-28T17:30:00.000Z', 'an ISO time')
  const four = retryTimeFrom("You've hit your usage limit. Upgrade to Pro or try again at 4pm.", now)!
  t.same([four.getDate(), four.getHours(), four.getMinutes()], [28, 16, 0], 'try again at 4pm: today at 16:00')
  const early = retryTimeFrom('limit resets at 9:30 am', now)!
  t.same([early.getDate(), early.getHours(), early.getMinutes()], [29, 9, 30], 'a time already past today is tomorrow')
  t.equal(retryTimeFrom('Please try again in 20s.', now)?.getTime(), now.getTime() + 20_000)
  t.equal(retryTimeFrom('try again in 2 hours', now)?.getTime(), now.getTime() + 7_200_000)
  t.equal(retryTimeFrom('overloaded, try again later', now), undefined, 'no time named')
  t.equal(retryTimeFrom('at 5 things', now), undefined, 'a bare number is no clock time')
})

t.test('isTransientUpstream knows rate limits, overloads and usage limits, not auth or bugs', async (t) => {
  for (const s of ['rate_limit_error', 'Overloaded', 'HTTP 529', '429 Too Many Requests', "You've hit your usage limit", 'try again in 20s']) t.ok(isTransientUpstream(s), s)
  for (const s of ['Not logged in', 'Invalid API key', 'TypeError: x is undefined']) t.notOk(isTransientUpstream(s), s)
})

const input = (over: Partial<AdapterWakeInput> = {}): AdapterWakeInput => ({
  runId: 'run-1',
  agentId: 'agent-1',
  squadId: 'squad-1',
  issueId: 'issue-1',
  reason: 'mention',
  env: { SVC_API_URL: 'http://slaw.local' },
  config: {},
  timeoutMs: 1000,
  graceMs: 100,
  signal: new AbortController().signal,
  ...over,
})

t.test('the default wake prompt names the reason, the issue, the comment and the API', async (t) => {
  const text = renderWakePrompt(
    undefined,
    input({
      context: { issue: { id: 'issue-1', identifier: 'ENG-7', title: 'Fix login', description: 'Users cannot log in.', status: 'todo' }, comment: { id: 'c', body: '@ada look', authorName: 'bob' } },
    }),
  )
  t.match(text, /woken by slaw \(mention\)/)
  t.match(text, /ENG-7: Fix login \(status todo\)/)
  t.match(text, /Users cannot log in\./)
  t.match(text, /The newest comment, which mentioned you \(bob\):\n\n@ada look/)
  t.match(text, /SVC_API_URL.*SVC_API_KEY/s)
  t.match(text, /api\/issues\/ENG-7\/checkout/)
  t.notMatch(text, /\{\{/, 'every variable is filled in')
  const bare = renderWakePrompt(undefined, input({ issueId: null }))
  t.notMatch(bare, /Your issue/, 'no issue section without an issue')
  t.notMatch(bare, /newest comment/, 'no comment section without a comment')
  t.ok(defaultWakePromptTemplate.includes('{{#issue}}'))
})

t.test('promptTemplate overrides it; unknown variables stay visible', async (t) => {
  const text = renderWakePrompt(
    'Work on {{issue.identifier}} for {{agent.name}} ({{reason}}), run {{runId}} at {{apiUrl}}. {{nope}}',
    input({ context: { agentName: 'ada', issue: { id: randomUUID(), identifier: 'ENG-1', title: 't', description: null, status: 'todo' } } }),
  )
  t.equal(text, 'Work on ENG-1 for ada (mention), run run-1 at http://slaw.local. {{nope}}')
})
