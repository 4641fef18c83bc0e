import { fileURLToPath } from 'node:url'
import { defaultClientConditions } from 'vite'
import { defineConfig } from 'vitest/config'

const here = fileURLToPath(new URL('.', import.meta.url))

export default defineConfig({
  root: here,
  // Relative asset URLs: the console is mounted under whatever path the server chooses.
  base: './',
  resolve: {
    // The workspace's own packages are bundled from their TypeScript source (no prior build needed).
    conditions: ['slaw-source', ...defaultClientConditions],
    // One React: hoisted libraries (TanStack Query) would otherwise find an older React at the root.
    dedupe: ['react', 'react-dom'],
  },
  build: {
    outDir: fileURLToPath(new URL('../dist/app', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // One small CSS file and hashed chunks; no inline scripts or styles (the server's CSP is `default-src 'self'`).
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: true,
    rollupOptions: {
      // TanStack Query marks its modules "use client" (a React Server Components hint): meaningless here.
      onwarn(warning, warn) {
        if (warning.code === 'MODULE_LEVEL_DIRECTIVE') return
        warn(warning)
      },
    },
  },
  test: {
    root: here,
    include: ['test/**/*.test.ts'],
    environment: 'node',
  },
})
