import t from 'tap'
import * as nodeModule from 'node:module'
import { enableCompileCache, flushCompileCache } from '../src/compile-cache.js'

// Node's compile cache where Node has one (22.1+); elsewhere nothing happens and nothing throws.
t.test('the compile cache is on where Node has one, and never fails a start', async (t) => {
  const node = nodeModule as { getCompileCacheDir?: () => string | undefined }
  enableCompileCache()
  flushCompileCache()
  if (node.getCompileCacheDir) t.ok(node.getCompileCacheDir() || process.env.NODE_DISABLE_COMPILE_CACHE, 'enabled (unless disabled by the environment)')
  else t.pass(`Node ${process.version} has no compile cache: a no-op`)
})
