import { createHash } from 'node:crypto'
import t from 'tap'
import { contentHash } from '@slaw/tower'
import { forEachBackend } from './helpers/tower.js'

forEachBackend(t, { autoApprove: true }, async (t, h) => {
  const { apiKey } = await h.enrolled()
  const get = (path: string) => h.call('GET', `/api/ingest/v1${path}`, { key: apiKey })

  t.test('an empty catalog', async (t) => {
    const res = await get('/skills')
    t.equal(res.status, 200)
    t.same(res.body, { catalogVersion: 0, skills: [] })
  })

  t.test('publish, list, fetch by key', async (t) => {
    const files = [{ path: 'scripts/run.sh', content: 'echo hi', encoding: 'utf8' }]
    const published = await h.admin('PUT', '/skills/code-review', {
      name: 'Code review',
      description: 'Review a pull request',
      category: 'engineering',
      trustLevel: 'scripts_executables',
      markdown: '# Code review\nRead the diff.',
      files,
      metadata: { b: 1, a: { y: 2, x: 1 } },
    })
    t.equal(published.status, 200)
    t.equal(published.body.catalogVersion, 1)
    t.equal(published.body.skill.version, 1)
    t.equal(published.body.skill.contentHash, contentHash('# Code review\nRead the diff.', files as never))
    t.match(published.body.skill.contentHash, /^[0-9a-f]{64}$/)

    const catalog = await get('/skills')
    t.equal(catalog.body.catalogVersion, 1)
    t.equal(catalog.body.skills.length, 1)
    const [descriptor] = catalog.body.skills
    t.match(descriptor, { key: 'code-review', slug: 'code-review', name: 'Code review', trustLevel: 'scripts_executables', version: 1, hasFiles: true, category: 'engineering' })
    t.notOk('markdown' in descriptor, 'the catalog carries no content')

    const skill = await get('/skills/code-review')
    t.equal(skill.status, 200)
    t.equal(skill.body.markdown, '# Code review\nRead the diff.')
    t.same(skill.body.files, files)
    t.equal(skill.body.contentHash, descriptor.contentHash)

    const same = await h.admin('PUT', '/skills/code-review', {
      name: 'Code review',
      description: 'Review a pull request',
      category: 'engineering',
      trustLevel: 'scripts_executables',
      markdown: '# Code review\nRead the diff.',
      files,
      metadata: { a: { x: 1, y: 2 }, b: 1 },
    })
    t.equal(same.body.catalogVersion, 1, 'publishing the same skill again changes nothing')
    t.equal(same.body.skill.version, 1)

    const changed = await h.admin('PUT', '/skills/code-review', { name: 'Code review', trustLevel: 'markdown_only', markdown: '# Code review v2' })
    t.equal(changed.body.catalogVersion, 2)
    t.equal(changed.body.skill.version, 2)
    t.not(changed.body.skill.contentHash, descriptor.contentHash)
    t.equal(changed.body.skill.hasFiles, false)
  })

  t.test('unknown, unpublished and malformed keys answer 404 skill_not_found', async (t) => {
    await h.admin('PUT', '/skills/short-lived', { name: 'Short lived', trustLevel: 'markdown_only', markdown: 'x' })
    t.equal((await get('/skills/short-lived')).status, 200)
    const unpublished = await h.admin('DELETE', '/skills/short-lived')
    t.equal(unpublished.status, 200)
    const versionAfter = unpublished.body.catalogVersion
    for (const key of ['short-lived', 'never-was', '.hidden', '%00', '%zz', '-bad', 'x'.repeat(300), 'y'.repeat(600)]) {
      const res = await get(`/skills/${key}`)
      t.equal(res.status, 404, key)
      t.same(res.body, { error: res.body.error, code: 'skill_not_found' })
    }
    const catalog = await get('/skills')
    t.equal(catalog.body.catalogVersion, versionAfter)
    t.notOk(catalog.body.skills.some((s: { key: string }) => s.key === 'short-lived'))
    t.equal((await h.admin('DELETE', '/skills/short-lived')).body.catalogVersion, versionAfter, 'unpublishing twice changes nothing')
    t.equal((await h.admin('DELETE', '/skills/never-was')).status, 404)
    const all = await h.admin('GET', '/skills')
    t.equal(all.body.skills.find((s: { key: string }) => s.key === 'short-lived').published, false)
    const republished = await h.admin('PUT', '/skills/short-lived', { name: 'Short lived', trustLevel: 'markdown_only', markdown: 'x' })
    t.equal(republished.body.catalogVersion, versionAfter + 1)
    t.equal((await get('/skills/short-lived')).status, 200)
  })

  t.test('publish validation', async (t) => {
    t.equal((await h.admin('PUT', '/skills/bad key', { name: 'x', trustLevel: 'x', markdown: 'x' })).status, 400)
    t.equal((await h.admin('PUT', '/skills/ok', { name: 'x', markdown: 'x' })).status, 400, 'trustLevel required')
    t.equal((await h.admin('PUT', '/skills/ok', { name: 'x', trustLevel: 'x', markdown: 'x', files: [{ path: 'a', content: 'b', encoding: 'latin1' }] })).status, 400)
  })

  t.test('concurrent publishes each get their own catalog version', async (t) => {
    const before = (await get('/skills')).body.catalogVersion as number
    const replies = await Promise.all(Array.from({ length: 5 }, (_, i) => h.admin('PUT', `/skills/parallel-${i}`, { name: `P${i}`, trustLevel: 'markdown_only', markdown: `# ${i}` })))
    const versions = replies.map((r) => r.body.catalogVersion as number).sort((a, b) => a - b)
    t.same(versions, [before + 1, before + 2, before + 3, before + 4, before + 5])
  })
})

t.test('contentHash is a hex SHA-256 independent of file order', async (t) => {
  const a = { path: 'a.txt', content: 'A', encoding: 'utf8' as const }
  const b = { path: 'b.bin', content: 'Qg==', encoding: 'base64' as const }
  t.equal(contentHash('# x', [a, b]), contentHash('# x', [b, a]))
  t.not(contentHash('# x', [a]), contentHash('# y', [a]))
  t.equal(
    contentHash('# x', []),
    createHash('sha256')
      .update(JSON.stringify({ markdown: '# x', files: [] }))
      .digest('hex'),
  )
})
