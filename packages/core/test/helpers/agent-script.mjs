// A tiny agent for the run engine's tests: it does what the wake environment lets it do, with
// nothing but Node and the SVC_* variables. Behaviour is chosen by argv[2].
const env = process.env
const mode = process.argv[2] ?? 'work'
const headers = { authorization: `Bearer ${env.SVC_API_KEY}`, 'content-type': 'application/json', 'x-svc-run-id': env.SVC_RUN_ID }

async function call(method, path, body) {
  const res = await fetch(`${env.SVC_API_URL}${path}`, { method, headers, ...(body ? { body: JSON.stringify(body) } : {}) })
  const text = await res.text()
  if (!res.ok) {
    console.log(`FAILED ${method} ${path}: ${res.status} ${text}`)
    process.exit(3)
  }
  return JSON.parse(text)
}

if (mode === 'work') {
  await call('POST', `/api/issues/${env.SVC_TASK_ID}/checkout`, { agentId: env.SVC_AGENT_ID })
  await call('POST', `/api/issues/${env.SVC_TASK_ID}/comments`, { body: 'Checked out; on it.' })
  await call('POST', `/api/heartbeat-runs/${env.SVC_RUN_ID}/report`, {
    liveness: 'completed',
    usage: { provider: 'anthropic', model: 'claude-test', inputTokens: 1200, outputTokens: 300, costCents: 42 },
  })
  await call('PATCH', `/api/issues/${env.SVC_TASK_ID}`, { status: 'done', comment: 'Done.' })
  // The environment names (never values) and the token, for the test to check after the run.
  const { writeFileSync } = await import('node:fs')
  writeFileSync(process.argv[3], JSON.stringify({ envNames: Object.keys(env).sort(), token: env.SVC_API_KEY }))
} else if (mode === 'hang') {
  console.log('started')
  setInterval(() => undefined, 1_000)
} else if (mode === 'env') {
  // Writes the values of the variables named after the report path, for a test of bindings.
  const { writeFileSync } = await import('node:fs')
  writeFileSync(process.argv[3], JSON.stringify(Object.fromEntries(process.argv.slice(4).map((n) => [n, env[n] ?? null]))))
  await call('POST', `/api/heartbeat-runs/${env.SVC_RUN_ID}/report`, { liveness: 'completed' })
} else if (mode === 'plan') {
  await call('POST', `/api/heartbeat-runs/${env.SVC_RUN_ID}/report`, { liveness: 'plan_only' })
}
