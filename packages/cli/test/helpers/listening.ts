import type { ChildProcess } from 'node:child_process'

/** The line `slaw start` prints once it listens (with `--port 0`, the port the system chose). */
const listening = /^slaw listening on http:\/\/[^\s:]+:(\d+)$/m

/**
 * Collects a child's stdout and stderr, and resolves with the port it printed once `/api/health`
 * answers 200 there. Tests start the CLI with `--port 0`, so no test races another process for a
 * port it believed free.
 */
export function watchStart(child: ChildProcess, timeoutMs = 60_000): { output: () => string; ready: Promise<number> } {
  let out = ''
  child.stdout?.on('data', (c) => (out += c))
  child.stderr?.on('data', (c) => (out += c))
  const ready = (async () => {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      if (child.exitCode !== null) throw new Error(`slaw start exited early (${child.exitCode}): ${out}`)
      const port = listening.exec(out)?.[1]
      if (port) {
        const ok = await fetch(`http://127.0.0.1:${port}/api/health`).then(
          (r) => r.status === 200,
          () => false,
        )
        if (ok) return Number(port)
      }
      if (Date.now() > deadline) throw new Error(`not healthy: ${out}`)
      await new Promise((r) => setTimeout(r, 50))
    }
  })()
  return { output: () => out, ready }
}
