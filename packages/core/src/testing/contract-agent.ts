import { request } from 'node:http'

/**
 * What the adapter contract kit asks a well-behaved agent to do. The kit hands each scenario to the
 * author's `configFor(scenario)`, which returns the adapter config that makes an agent behave so.
 * Every agent the kit wakes has `SVC_API_URL` pointing at the kit's probe (standing in for slaw's
 * API), and reports to it as a real agent reports to slaw:
 *
 * - `succeed`: POST `${SVC_API_URL}/contract/ran`, then finish successfully (exit 0, a 2xx answer…).
 * - `fail`: finish unsuccessfully: exit with `exitCode`, or answer the wake with an error status.
 * - `unreachable`: a config whose agent cannot be reached at all (a command that does not exist, a
 *   port nothing listens on). The config itself is well-formed.
 * - `hang`: GET `${SVC_API_URL}/contract/hold` (the probe never answers it) and never finish on its
 *   own. When the adapter stops the agent, that connection closes: that is how the kit sees it stop.
 * - `print`: write `bytes` bytes of output, then `lastLine` and a newline, then finish successfully.
 * - `echo-env`: POST its whole environment as a JSON object to `${SVC_API_URL}/contract/env`, then
 *   finish successfully.
 *
 * For a command-running adapter, `contractAgentSource` is such an agent; for an in-process receiver
 * (an HTTP endpoint, a queue worker in the test), `playContractAgent` is.
 */
export type AdapterScenario =
  | { kind: 'succeed' }
  | { kind: 'fail'; exitCode: number }
  | { kind: 'unreachable' }
  | { kind: 'hang' }
  | { kind: 'print'; bytes: number; lastLine: string }
  | { kind: 'echo-env' }

/** What `playContractAgent` did: whether the run went well, its exit code and its output. */
export interface ContractAgentOutcome {
  ok: boolean
  exitCode: number
  output: string
}

/**
 * Plays a well-behaved agent in this process, for adapters whose agent the test hosts itself (an
 * HTTP receiver, a queue worker). `env` is what the adapter delivered; `signal` is how the host learns
 * the adapter stopped the agent (e.g. the wake request's connection closed): a `hang` ends only then.
 *
 * @example
 * ```ts
 * // an HTTP receiver in the author's test: the scenario rides in the URL configFor returned
 * const outcome = await playContractAgent(scenario, body.env, { signal: closedWhenRequestCloses })
 * res.writeHead(outcome.ok ? 200 : 500).end(outcome.output)
 * ```
 */
export async function playContractAgent(scenario: AdapterScenario, env: Record<string, string>, options: { signal?: AbortSignal } = {}): Promise<ContractAgentOutcome> {
  const api = env.SVC_API_URL ?? ''
  switch (scenario.kind) {
    case 'succeed':
      await call('POST', `${api}/contract/ran`, env.SVC_RUN_ID ?? '')
      return { ok: true, exitCode: 0, output: '' }
    case 'fail':
      return { ok: false, exitCode: scenario.exitCode, output: `failing with ${scenario.exitCode}\n` }
    case 'echo-env':
      await call('POST', `${api}/contract/env`, JSON.stringify(env))
      return { ok: true, exitCode: 0, output: '' }
    case 'print':
      return { ok: true, exitCode: 0, output: `${'x'.repeat(scenario.bytes)}${scenario.lastLine}\n` }
    case 'hang':
      await hold(`${api}/contract/hold`, options.signal)
      return { ok: false, exitCode: 1, output: 'stopped\n' }
    case 'unreachable':
      throw new Error('playContractAgent: an unreachable agent is never woken')
  }
}

function call(method: string, url: string, body: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume()
      res.on('end', () => resolve())
    })
    req.on('error', reject)
    req.end(body)
  })
}

function hold(url: string, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const req = request(url, { method: 'GET', agent: false })
    req.on('error', () => resolve())
    req.on('close', () => resolve())
    req.end()
    if (signal?.aborted) req.destroy()
    signal?.addEventListener('abort', () => req.destroy(), { once: true })
  })
}

/**
 * A well-behaved agent as a Node.js program, for adapters that run a command: pass it to `node -e`
 * with the scenario as JSON in the last argument, e.g.
 * `{ command: process.execPath, args: ['-e', contractAgentSource, JSON.stringify(scenario)] }`,
 * or write it to a `.mjs` file. It uses only Node's built-ins and exits with the scenario's code.
 */
export const contractAgentSource = String.raw`
const http = require('node:http')
const scenario = JSON.parse(process.argv[process.argv.length - 1])
const api = process.env.SVC_API_URL
const call = (method, url, body) => new Promise((resolve, reject) => {
  const req = http.request(url, { method, agent: false, headers: { 'content-type': 'application/json' } }, (res) => { res.resume(); res.on('end', resolve) })
  req.on('error', reject)
  req.end(body)
})
const write = (chunk) => new Promise((resolve) => (process.stdout.write(chunk) ? resolve() : process.stdout.once('drain', resolve)))
async function main() {
  switch (scenario.kind) {
    case 'succeed': await call('POST', api + '/contract/ran', process.env.SVC_RUN_ID || ''); return 0
    case 'fail': process.stdout.write('failing with ' + scenario.exitCode + '\n'); return scenario.exitCode
    case 'echo-env': await call('POST', api + '/contract/env', JSON.stringify(process.env)); return 0
    case 'print': {
      const block = 'x'.repeat(64 * 1024)
      let left = scenario.bytes
      while (left > 0) { const n = Math.min(left, block.length); await write(block.slice(0, n)); left -= n }
      await write(scenario.lastLine + '\n')
      return 0
    }
    case 'hang': http.request(api + '/contract/hold', { agent: false }).on('error', () => {}).end(); setInterval(() => {}, 1 << 30); return null
    default: process.stderr.write('unknown scenario ' + scenario.kind + '\n'); return 2
  }
}
main().then((code) => { if (code !== null) process.exitCode = code }, (err) => { process.stderr.write(String(err && err.stack || err) + '\n'); process.exitCode = 70 })
`
