import t from 'tap'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { nodeEntry } from '../../../scripts/node-entry.js'
import { watchStart } from './helpers/listening.js'

// Ctrl-C on `npm start` prints "stopped" and exits 0: the first SIGINT drains, later ones are absorbed.
const node = [process.execPath, ...nodeEntry(new URL('../src/bin.ts', import.meta.url))]

t.test('Ctrl-C under npm start (sh -c, SIGINT twice to the group): "stopped", exit 0', async (t) => {
  // npm runs the root start script with `sh -c` in the terminal's process group; Ctrl-C signals the
  // whole group and npm forwards one more SIGINT. dash dies of SIGINT while it waits for a child, and
  // npm then exits 130 whatever node does, so the script execs node in the shell's place.
  const root = new URL('../../../', import.meta.url).pathname
  const script = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start
  t.match(script, /^exec (env (MALLOC_\w+=\$\{MALLOC_\w+:-\d+\} )+)?node packages\/cli\/dist\/bin\.cjs start$/)
  const command = script.replace('node packages/cli/dist/bin.cjs', node.map((a) => `'${a}'`).join(' ')) + ' --port 0'
  const sh = spawn('sh', ['-c', command], {
    cwd: root,
    detached: true,
    env: { ...process.env, LOG_LEVEL: 'fatal', SVC_DATA_DIR: 'memory://', SVC_OPERATOR_KEY: 'slaw_op_fail_fast_test_key_0001' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const { output, ready } = watchStart(sh)
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => sh.once('exit', (code, signal) => resolve({ code, signal })))
  t.teardown(() => {
    try {
      process.kill(-sh.pid!, 'SIGKILL')
    } catch {
      // gone already
    }
  })
  await ready
  process.kill(-sh.pid!, 'SIGINT')
  process.kill(sh.pid!, 'SIGINT')
  const { code, signal } = await exited
  t.same({ code, signal }, { code: 0, signal: null }, `exit 0, not killed by the second SIGINT (output: ${output()})`)
  t.match(output(), /slaw stopped \(SIGINT\)/)
})
