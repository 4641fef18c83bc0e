import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { operatorActor, skillContentHash, type TowerClient } from '@slaw/core'
import type { Skill, SkillCatalog } from '@slaw/core/ingest'
import { confineSkillSource } from '../src/services/fleet/skill-sources.js'
import { eachBackend, type TestApi } from './helpers/instance.js'
import { activityOf, isError, unknownId } from './helpers/fixtures.js'

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'slaw-skills-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

/**
 * The squad_skill upserts in the outbox, oldest first. Rows are published once every older
 * transaction on the server has ended (a shared PostgreSQL may have some open elsewhere), so this
 * waits a little for `atLeast` of them.
 */
async function skillUpserts(api: TestApi, atLeast: number): Promise<any[]> {
  const until = Date.now() + 10_000
  for (;;) {
    const rows = (await api.instance.storage.outbox.readAfter('0', 10_000)).filter((r) => r.entityType === 'squad_skill')
    if (rows.length >= atLeast || Date.now() > until) return rows.map((r) => ({ kind: r.kind, entityId: r.entityId, squadId: r.squadId, ...r.payload }))
    await new Promise((r) => setTimeout(r, 50))
  }
}

async function createSkill(api: TestApi, squadId: string, body: Record<string, unknown>): Promise<any> {
  const res = await api.call('POST', `/api/squads/${squadId}/skills`, { name: 'A skill', markdown: '# Skill\n\nDo it well.\n', ...body })
  if (res.status !== 201) throw new Error(`createSkill: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.skill
}

const pngBytes = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0x10])

t.test('content hash: the documented computation, independent of the file encoding and order', async (t) => {
  const md = '# Hello\n\nÉté\n'
  const files = [
    { path: 'b/run.sh', content: 'echo hi\n', encoding: 'utf8' as const },
    { path: 'a.png', content: pngBytes.toString('base64'), encoding: 'base64' as const },
  ]
  const h = createHash('sha256')
  const mdBytes = Buffer.from(md, 'utf8')
  h.update(`markdown\n${mdBytes.length}\n`).update(mdBytes)
  h.update(`file\na.png\n${pngBytes.length}\n`).update(pngBytes)
  h.update(`file\nb/run.sh\n${Buffer.byteLength('echo hi\n')}\n`).update('echo hi\n')
  t.equal(skillContentHash(md, files), h.digest('hex'))
  t.equal(skillContentHash(md, [...files].reverse()), skillContentHash(md, files), 'file order does not matter')
  const asBase64 = [files[1]!, { path: 'b/run.sh', content: Buffer.from('echo hi\n').toString('base64'), encoding: 'base64' as const }]
  t.equal(skillContentHash(md, asBase64), skillContentHash(md, files), 'the same bytes hash the same in either encoding')
  t.not(skillContentHash(md, []), skillContentHash(md, files))
  t.not(skillContentHash(`${md} `, files), skillContentHash(md, files))
  t.match(skillContentHash('x', []), /^[0-9a-f]{64}$/)
})

eachBackend(t, 'skills: create, list, get, patch, delete, with activity and outbox rows', async (t, api) => {
  const s = await api.seed('Skillful')
  const files = [
    { path: 'scripts/run.sh', content: '#!/bin/sh\necho ok\n', encoding: 'utf8' },
    { path: 'assets/logo.png', content: pngBytes.toString('base64'), encoding: 'base64' },
  ]
  const created = await api.call('POST', `/api/squads/${s.squadId}/skills`, {
    key: 'deploy-app',
    name: '  Deploy the app  ',
    description: 'Ships it',
    markdown: '# Deploy\n\nRun scripts/run.sh.\n',
    files,
  })
  t.equal(created.status, 201, 'created')
  const skill = created.body.skill
  t.match(skill, { squadId: s.squadId, key: 'deploy-app', name: 'Deploy the app', description: 'Ships it', sourceType: 'local', trustLevel: 'local', version: 1, hasFiles: true })
  t.equal(skill.contentHash, skillContentHash('# Deploy\n\nRun scripts/run.sh.\n', files as any), 'contentHash is the documented hash')
  t.same(skill.files, files, 'files come back as sent')
  isError(t, await api.call('POST', `/api/squads/${s.squadId}/skills`, { key: 'deploy-app', name: 'again', markdown: 'x' }), 409, 'skill_key_taken')

  const other = await createSkill(api, s.squadId, { key: 'a-first', description: null })
  const list = await api.call('GET', `/api/squads/${s.squadId}/skills`)
  t.equal(list.status, 200)
  t.same(
    list.body.skills.map((x: any) => x.key),
    ['a-first', 'deploy-app'],
    'listed by key',
  )
  t.notOk('markdown' in list.body.skills[1], 'lists carry no markdown')
  t.notOk('files' in list.body.skills[1], 'lists carry no files')
  t.equal(list.body.skills[0].hasFiles, false)
  t.equal(list.body.skills[1].hasFiles, true)

  const got = await api.call('GET', `/api/skills/${skill.id}`)
  t.equal(got.status, 200)
  t.equal(got.body.skill.markdown, '# Deploy\n\nRun scripts/run.sh.\n')
  t.same(got.body.skill.files, files)

  const renamed = await api.call('PATCH', `/api/skills/${skill.id}`, { name: 'Deploy', trustLevel: 'verified' })
  t.equal(renamed.status, 200)
  t.equal(renamed.body.skill.version, 2, 'an edit bumps the version')
  t.equal(renamed.body.skill.trustLevel, 'verified')
  t.equal(renamed.body.skill.contentHash, skill.contentHash, 'a rename keeps the content hash')
  const same = await api.call('PATCH', `/api/skills/${skill.id}`, { name: 'Deploy' })
  t.equal(same.body.skill.version, 2, 'a change to nothing makes no new version')
  const edited = await api.call('PATCH', `/api/skills/${skill.id}`, { markdown: '# Deploy v2\n', files: [] })
  t.equal(edited.body.skill.version, 3)
  t.equal(edited.body.skill.hasFiles, false)
  t.equal(edited.body.skill.contentHash, skillContentHash('# Deploy v2\n', []))
  const cleared = await api.call('PATCH', `/api/skills/${skill.id}`, { description: null })
  t.equal(cleared.body.skill.description, null, 'null clears the description')
  isError(t, await api.call('PATCH', `/api/skills/${skill.id}`, { key: 'renamed' }), 400, 'invalid_payload', 'the key never changes')

  const deleted = await api.call('DELETE', `/api/skills/${other.id}`)
  t.equal(deleted.status, 200)
  t.same(deleted.body, { ok: true })
  isError(t, await api.call('GET', `/api/skills/${other.id}`), 404, 'not_found', 'deleted skill')
  isError(t, await api.call('DELETE', `/api/skills/${other.id}`), 404, 'not_found', 'delete twice')

  const activity = await activityOf(api, s.squadId, 'entityType=skill')
  t.same(activity.map((a) => a.action).reverse(), ['skill.created', 'skill.created', 'skill.updated', 'skill.updated', 'skill.updated', 'skill.deleted'])
  t.equal(activity[0].details.key, 'a-first')
  t.notOk(JSON.stringify(activity).includes('Run scripts/run.sh'), 'activity never carries the markdown')

  const upserts = await skillUpserts(api, 6)
  t.equal(upserts.length, 6, 'one upsert per write')
  t.same(upserts[0], {
    kind: 'upsert',
    entityId: skill.id,
    squadId: s.squadId,
    type: 'squad_skill',
    localId: skill.id,
    squadLocalId: s.squadId,
    key: 'deploy-app',
    name: 'Deploy the app',
    description: 'Ships it',
    sourceType: 'local',
    trustLevel: 'local',
    updatedAt: skill.updatedAt,
  })
  t.ok('description' in upserts[1] && upserts[1].description === null, 'no description: the nullable key is sent as null')
  const tombstone = upserts[5]
  t.equal(tombstone.localId, other.id)
  t.equal(tombstone.sourceType, 'deleted', 'a delete sends a tombstone')
  t.ok(Date.parse(tombstone.updatedAt) >= Date.parse(other.updatedAt))
  t.notOk(JSON.stringify(upserts).includes('Deploy v2'), 'no upsert carries content')
})

eachBackend(t, 'skills: validation', async (t, api) => {
  const s = await api.seed('Rules')
  const url = `/api/squads/${s.squadId}/skills`
  const base = { key: 'ok-key', name: 'n', markdown: '# m' }
  for (const key of ['', 'Upper', '-lead', '.lead', 'has space', 'a/b', 'x'.repeat(101), 'ünï']) {
    isError(t, await api.call('POST', url, { ...base, key }), 400, 'invalid_payload', `key ${JSON.stringify(key)}`)
  }
  for (const key of ['a', '0', 'a.b_c-d', 'x'.repeat(100)]) {
    t.equal((await api.call('POST', url, { ...base, key })).status, 201, `key ${key.slice(0, 20)} is fine`)
  }
  isError(t, await api.call('POST', url, { ...base, key: 'blank-md', markdown: '  \n ' }), 400, 'invalid_payload', 'blank markdown')
  isError(t, await api.call('POST', url, { ...base, key: 'blank-name', name: '   ' }), 400, 'invalid_payload', 'blank name')
  isError(t, await api.call('POST', url, { ...base, key: 'nul-md', markdown: 'a\u0000b' }), 400, 'invalid_payload', 'NUL in markdown')
  // 300,000 two-byte characters: under the character bound, over the 512 KiB byte limit.
  const big = await api.call('POST', url, { ...base, key: 'big', markdown: 'é'.repeat(300_000) })
  isError(t, big, 400, 'invalid_payload', 'markdown over the byte limit')
  t.equal(big.body.details[0].path, '/markdown')
  isError(t, await api.call('POST', url, { ...base, key: 'tl', trustLevel: 'Very Trusted' }), 400, 'invalid_payload', 'trustLevel label')
  isError(t, await api.call('POST', url, { ...base, key: 'extra', extra: 1 }), 400, 'invalid_payload', 'unknown field')
  isError(t, await api.call('POST', url, { key: 'nomd', name: 'n' }), 400, 'invalid_payload', 'markdown required')

  const badPaths = ['../etc/passwd', 'a/../../b', '/abs', '~/x', 'C:/x', 'a\\b', 'a//b', './a', 'a/', 'a/./b', 'tab\tname']
  for (const path of badPaths) {
    const res = await api.call('POST', url, { ...base, key: 'paths', files: [{ path, content: 'x', encoding: 'utf8' }] })
    isError(t, res, 400, 'invalid_payload', `path ${JSON.stringify(path)}`)
    t.equal(res.body.details?.[0]?.path, '/files/0/path', `path ${JSON.stringify(path)}: detail points at it`)
  }
  const dup = await api.call('POST', url, {
    ...base,
    key: 'dup',
    files: [
      { path: 'a.txt', content: 'x', encoding: 'utf8' },
      { path: 'a.txt', content: 'y', encoding: 'utf8' },
    ],
  })
  isError(t, dup, 400, 'invalid_payload', 'duplicate path')
  t.equal(dup.body.details[0].path, '/files/1/path')
  for (const content of ['abc', '!!!!', 'QR==', 'QQ=', 'Q Q==']) {
    const res = await api.call('POST', url, { ...base, key: 'b64', files: [{ path: 'f.bin', content, encoding: 'base64' }] })
    isError(t, res, 400, 'invalid_payload', `base64 ${JSON.stringify(content)}`)
    t.equal(res.body.details?.[0]?.path, '/files/0/content')
  }
  isError(t, await api.call('POST', url, { ...base, key: 'nul-file', files: [{ path: 'f.txt', content: 'a\u0000', encoding: 'utf8' }] }), 400, 'invalid_payload', 'NUL in utf8 file')
  isError(t, await api.call('POST', url, { ...base, key: 'enc', files: [{ path: 'f.txt', content: 'a', encoding: 'latin1' }] }), 400, 'invalid_payload', 'unknown encoding')
  const ok = await api.call('POST', url, {
    ...base,
    key: 'good-files',
    files: [
      { path: 'nested/dir/file.bin', content: 'QQ==', encoding: 'base64' },
      { path: 'empty.txt', content: '', encoding: 'utf8' },
    ],
  })
  t.equal(ok.status, 201, 'nested paths, canonical base64 and empty files are fine')

  isError(t, await api.call('GET', `/api/squads/${unknownId}/skills`), 404, 'not_found', 'unknown squad')
  isError(t, await api.call('POST', `/api/squads/not-a-uuid/skills`, base), 404, 'not_found', 'malformed squad id')
  isError(t, await api.call('GET', '/api/skills/not-a-uuid'), 404, 'not_found', 'malformed skill id')
  isError(t, await api.call('PATCH', `/api/skills/${unknownId}`, { name: 'x' }), 404, 'not_found', 'unknown skill')

  t.equal((await api.call('POST', `/api/squads/${s.squadId}/archive`)).status, 200)
  isError(t, await api.call('POST', url, { ...base, key: 'late' }), 409, 'squad_archived', 'archived squad')
  isError(t, await api.call('PATCH', `/api/skills/${ok.body.skill.id}`, { name: 'x' }), 409, 'squad_archived', 'edit in archived squad')
  t.equal((await api.call('GET', url)).status, 200, 'an archived squad still lists its skills')
})

eachBackend(t, 'skills: agents read their own squad, write nothing, and never see another squad', async (t, api) => {
  const a = await api.seed('Alpha')
  const b = await api.seed('Beta')
  const mine = await createSkill(api, a.squadId, { key: 'mine' })
  const theirs = await createSkill(api, b.squadId, { key: 'theirs' })
  const list = await api.call('GET', `/api/squads/${a.squadId}/skills`, undefined, a.agentToken)
  t.equal(list.status, 200)
  t.same(
    list.body.skills.map((x: any) => x.key),
    ['mine'],
  )
  const got = await api.call('GET', `/api/skills/${mine.id}`, undefined, a.agentToken)
  t.equal(got.status, 200)
  t.equal(got.body.skill.markdown, mine.markdown)

  isError(t, await api.call('POST', `/api/squads/${a.squadId}/skills`, { key: 'x', name: 'x', markdown: 'x' }, a.agentToken), 403, 'forbidden', 'agent creates')
  isError(t, await api.call('POST', `/api/squads/${a.squadId}/skills/import`, { source: '/etc/hostname' }, a.agentToken), 403, 'forbidden', 'agent imports')
  isError(t, await api.call('PATCH', `/api/skills/${mine.id}`, { name: 'x' }, a.agentToken), 403, 'forbidden', 'agent edits')
  isError(t, await api.call('DELETE', `/api/skills/${mine.id}`, undefined, a.agentToken), 403, 'forbidden', 'agent deletes')

  isError(t, await api.call('GET', `/api/squads/${b.squadId}/skills`, undefined, a.agentToken), 404, 'not_found', 'other squad list')
  isError(t, await api.call('GET', `/api/skills/${theirs.id}`, undefined, a.agentToken), 404, 'not_found', 'other squad skill')
  isError(t, await api.call('PATCH', `/api/skills/${theirs.id}`, { name: 'x' }, a.agentToken), 404, 'not_found', 'edit other squad skill')
  isError(t, await api.call('DELETE', `/api/skills/${theirs.id}`, undefined, a.agentToken), 404, 'not_found', 'delete other squad skill')
  isError(t, await api.call('POST', `/api/squads/${b.squadId}/skills`, { key: 'x', name: 'x', markdown: 'x' }, a.agentToken), 404, 'not_found', 'create in other squad')
  isError(t, await api.call('GET', `/api/squads/${a.squadId}/skills`, undefined, null), 401, 'unauthorized', 'no key')
  t.equal((await api.call('GET', `/api/skills/${mine.id}`)).body.skill.version, 1, 'nothing changed')
})

/** The skills folder of the instance a test runs on (createInstance `skillsDir`): imports read only inside it. */
let skillsRoot = ''
const withSkillsDir = () => {
  skillsRoot = mkdtempSync(join(tmpdir(), 'slaw-skills-root-'))
  const root = skillsRoot
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  return { skillsDir: root }
}

eachBackend(
  t,
  'skills: import from a SKILL.md folder, a markdown file and a JSON skill',
  async (t, api) => {
    const s = await api.seed('Importers')
    const dir = await mkdtemp(join(skillsRoot, 'import-'))
    const folder = join(dir, 'Release Notes')
    await mkdir(join(folder, 'scripts'), { recursive: true })
    await mkdir(join(folder, '.git'), { recursive: true })
    const skillMd = '---\nname: release-notes\ndescription: >\n  Writes release notes\n  from merged PRs.\ntags: [a, b]\n---\n# Release notes\n'
    await writeFile(join(folder, 'SKILL.md'), skillMd)
    await writeFile(join(folder, 'scripts', 'collect.sh'), 'git log --oneline\n')
    await writeFile(join(folder, 'icon.png'), pngBytes)
    await writeFile(join(folder, '.git', 'HEAD'), 'ref: x\n')
    await writeFile(join(folder, '.hidden'), 'secret\n')
    const url = `/api/squads/${s.squadId}/skills/import`

    const fromFolder = await api.call('POST', url, { source: folder })
    t.equal(fromFolder.status, 201, 'folder imported')
    const imported = fromFolder.body.skill
    t.match(imported, { key: 'release-notes', name: 'release-notes', description: 'Writes release notes from merged PRs.', sourceType: 'import', markdown: skillMd })
    t.same(
      imported.files.map((f: any) => [f.path, f.encoding]),
      [
        ['icon.png', 'base64'],
        ['scripts/collect.sh', 'utf8'],
      ],
      'other files, dot files skipped',
    )
    t.same(Buffer.from(imported.files[0].content, 'base64'), pngBytes, 'binary files arrive as base64')
    t.equal(imported.contentHash, skillContentHash(skillMd, imported.files))

    await writeFile(join(dir, 'Code Review.md'), '---\ntitle: ignored\ndescription: "Reviews code: carefully"\n---\nReview.\n')
    const fromFile = await api.call('POST', url, { source: join(dir, 'Code Review.md'), trustLevel: 'community' })
    t.equal(fromFile.status, 201)
    t.match(fromFile.body.skill, { key: 'code-review', name: 'code-review', description: 'Reviews code: carefully', trustLevel: 'community', hasFiles: false })
    isError(t, await api.call('POST', url, { source: join(dir, 'Code Review.md') }), 409, 'skill_key_taken', 'import twice')
    const renamed = await api.call('POST', url, { source: join(dir, 'Code Review.md'), key: 'review-2' })
    t.equal(renamed.body.skill.key, 'review-2', 'key given in the body wins')

    const jsonSkill = {
      key: 'json-skill',
      slug: 'json-skill',
      name: 'From JSON',
      description: 'Catalog shaped',
      trustLevel: 'verified',
      version: 7,
      hasFiles: true,
      updatedAt: new Date().toISOString(),
      markdown: '# JSON\n',
      files: [{ path: 'data/x.bin', content: pngBytes.toString('base64'), encoding: 'base64' }],
      contentHash: skillContentHash('# JSON\n', [{ path: 'data/x.bin', content: pngBytes.toString('base64'), encoding: 'base64' }]),
    }
    await writeFile(join(dir, 'skill.json'), JSON.stringify(jsonSkill))
    const fromJson = await api.call('POST', url, { source: join(dir, 'skill.json') })
    t.equal(fromJson.status, 201)
    t.match(fromJson.body.skill, { key: 'json-skill', name: 'From JSON', trustLevel: 'verified', version: 1, contentHash: jsonSkill.contentHash, sourceType: 'import' })

    await writeFile(join(dir, 'tampered.json'), JSON.stringify({ ...jsonSkill, key: 'tampered', markdown: '# changed\n' }))
    const tampered = await api.call('POST', url, { source: join(dir, 'tampered.json') })
    isError(t, tampered, 400, 'invalid_payload', 'contentHash mismatch')
    t.equal(tampered.body.details[0].path, '/source/contentHash')
    await writeFile(join(dir, 'unsafe.json'), JSON.stringify({ key: 'unsafe', name: 'u', markdown: 'x', files: [{ path: '../x', content: 'x', encoding: 'utf8' }] }))
    const unsafe = await api.call('POST', url, { source: join(dir, 'unsafe.json') })
    isError(t, unsafe, 400, 'invalid_payload', 'unsafe path in a JSON skill')
    t.equal(unsafe.body.details[0].path, '/source/files/0/path')
    await writeFile(join(dir, 'bad.json'), '{"name": 1}')
    isError(t, await api.call('POST', url, { source: join(dir, 'bad.json') }), 400, 'invalid_payload', 'JSON not in the catalog shape')
    await writeFile(join(dir, 'broken.json'), '{nope')
    isError(t, await api.call('POST', url, { source: join(dir, 'broken.json') }), 400, 'invalid_payload', 'malformed JSON')
    isError(t, await api.call('POST', url, { source: join(dir, 'missing.md') }), 400, 'invalid_payload', 'missing file')
    isError(t, await api.call('POST', url, { source: dir }), 400, 'invalid_payload', 'folder without SKILL.md')
    await writeFile(join(dir, '---.md'), 'no front matter\n')
    isError(t, await api.call('POST', url, { source: join(dir, '---.md') }), 400, 'invalid_payload', 'no key derivable')

    const activity = await activityOf(api, s.squadId, 'entityType=skill')
    t.equal(activity.filter((a) => a.action === 'skill.imported').length, 4)
    t.equal((await skillUpserts(api, 4)).length, 4)
  },
  withSkillsDir,
)

t.test('skill sources: the data directory is never read, inside the skills folder or holding it', async (t) => {
  const root = await tempDir(t)
  const dataDir = join(root, 'data')
  await mkdir(join(dataDir, 'pg'), { recursive: true })
  await writeFile(join(dataDir, 'master.key'), 'k')
  await writeFile(join(root, 'ok.md'), '# ok\n')
  const opts = { dir: root, protectedPaths: [dataDir] }
  t.equal(await confineSkillSource('ok.md', opts), join(root, 'ok.md'))
  for (const source of [dataDir, join(dataDir, 'master.key'), join(dataDir, 'pg'), root]) {
    await t.rejects(confineSkillSource(source, opts), { code: 'skill_source_refused' }, source)
  }
  await t.rejects(confineSkillSource('ok.md', { dir: null, protectedPaths: [] }), { code: 'skill_import_disabled' })
})

eachBackend(t, 'skills: imports from disk are off without a skills folder', async (t, api) => {
  const s = await api.seed('No folder')
  const dir = await tempDir(t)
  await writeFile(join(dir, 'x.md'), '# x\n')
  isError(t, await api.call('POST', `/api/squads/${s.squadId}/skills/import`, { source: join(dir, 'x.md') }), 403, 'skill_import_disabled', 'a readable file')
  isError(t, await api.call('POST', `/api/squads/${s.squadId}/skills/import`, { source: '/etc/hostname' }), 403, 'skill_import_disabled', '/etc/hostname')
  t.same((await api.call('GET', `/api/squads/${s.squadId}/skills`)).body.skills, [], 'nothing was imported')
})

eachBackend(
  t,
  'skills: imports stay inside the skills folder: no path outside it, no link, never the data directory or master key',
  async (t, api) => {
    const s = await api.seed('Confined')
    const url = `/api/squads/${s.squadId}/skills/import`
    const outside = await tempDir(t)
    await writeFile(join(outside, 'outside.md'), '# outside\n')
    await writeFile(join(skillsRoot, 'inside.md'), '---\nname: inside\n---\n# inside\n')
    t.equal((await api.call('POST', url, { source: join(skillsRoot, 'inside.md') })).status, 201, 'a file in the folder imports')
    t.equal((await api.call('POST', url, { source: 'inside.md', key: 'relative' })).status, 201, 'a relative path is taken inside the folder')

    const refused = async (source: string, what: string) => {
      const res = await api.call('POST', url, { source })
      isError(t, res, 403, 'skill_source_refused', what)
      t.equal(res.body.details?.[0]?.path, '/source')
    }
    await refused('/etc/hostname', '/etc/hostname')
    await refused(join(outside, 'outside.md'), 'a file of another folder')
    await refused('../outside.md', 'a relative path climbing out')
    await refused(join(skillsRoot, '..', 'x.md'), 'an absolute path climbing out')
    // The master key file (createInstance masterKey: {file}) lives in the folder here: still refused.
    await refused(join(skillsRoot, 'master.key'), 'the master key file')
    await refused(skillsRoot, 'a folder holding the master key')
    // Links: to a file outside, to a folder outside, and a folder link inside the path.
    await symlink(join(outside, 'outside.md'), join(skillsRoot, 'link.md'))
    await refused(join(skillsRoot, 'link.md'), 'a link to a file outside')
    await mkdir(join(outside, 'skill'))
    await writeFile(join(outside, 'skill', 'SKILL.md'), '# linked\n')
    await symlink(join(outside, 'skill'), join(skillsRoot, 'linked-skill'))
    await refused(join(skillsRoot, 'linked-skill'), 'a link to a folder')
    await refused(join(skillsRoot, 'linked-skill', 'SKILL.md'), 'a file reached through a folder link')
    const keys = (await api.call('GET', `/api/squads/${s.squadId}/skills`)).body.skills.map((k: any) => k.key).sort()
    t.same(keys, ['inside', 'relative'], 'only the two files inside were imported')
  },
  () => {
    const opts = withSkillsDir()
    return { ...opts, masterKey: { file: join(opts.skillsDir, 'master.key') } }
  },
)

eachBackend(t, 'skills: the tower catalog is applied, fetching only changed content, and installs into squads', async (t, api) => {
  const { skills } = api.instance.services
  const s = await api.seed('Fleet')
  const other = await api.seed('Other')
  const now = new Date('2025-01-01T00:00:00.000Z').toISOString()
  const full = (key: string, markdown: string, extra: Partial<Skill> = {}): Skill => ({
    key,
    slug: key,
    name: `Skill ${key}`,
    trustLevel: 'verified',
    version: 1,
    contentHash: skillContentHash(markdown, extra.files ?? []),
    hasFiles: (extra.files ?? []).length > 0,
    updatedAt: now,
    markdown,
    files: [],
    ...extra,
  })
  let published = new Map<string, Skill>()
  const fetched: string[] = []
  const fetchSkill = async (key: string) => {
    fetched.push(key)
    return published.get(key) ?? null
  }
  const catalogOf = (version: number): SkillCatalog => ({
    catalogVersion: version,
    skills: [...published.values()].map(({ markdown: _m, files: _f, ...d }) => d),
  })

  t.equal(await skills.appliedCatalogVersion(), null, 'nothing applied yet')
  published = new Map([
    ['alpha', full('alpha', '# Alpha\n')],
    ['beta', full('beta', '# Beta\n', { files: [{ path: 'b.txt', content: 'b', encoding: 'utf8' }], description: 'B' })],
  ])
  t.equal(await skills.applyCatalog(catalogOf(1), fetchSkill), 1)
  t.same(fetched.sort(), ['alpha', 'beta'], 'first pull fetches everything')
  t.equal(await skills.appliedCatalogVersion(), 1)
  const cat1 = await skills.catalog(operatorActor())
  t.same(
    cat1.map((c) => [c.key, c.catalogVersion, c.hasFiles]),
    [
      ['alpha', 1, false],
      ['beta', 1, true],
    ],
  )

  // Install alpha into the squad; installing again is a no-op refresh.
  const first = await skills.installFromCatalog(operatorActor(), 'alpha', s.squadId)
  t.equal(first.created, true)
  t.match(first.skill, { key: 'alpha', sourceType: 'tower', trustLevel: 'verified', version: 1, markdown: '# Alpha\n', name: 'Skill alpha' })
  const again = await skills.installFromCatalog(operatorActor(), 'alpha', s.squadId)
  t.equal(again.created, false)
  t.equal(again.skill.id, first.skill.id)
  await skills.installFromCatalog(operatorActor(), 'beta', other.squadId)
  await t.rejects(skills.installFromCatalog(operatorActor(), 'nope', s.squadId), { code: 'not_found' }, 'unknown catalog key')
  await t.rejects(skills.installFromCatalog({ type: 'agent', agentId: s.agentId, squadId: s.squadId, keyId: 'k', runId: null }, 'alpha', s.squadId), { code: 'forbidden' }, 'agents install nothing')
  await createSkill(api, s.squadId, { key: 'beta' })
  await t.rejects(skills.installFromCatalog(operatorActor(), 'beta', s.squadId), { code: 'skill_key_taken' }, 'a local skill of the same key stays')

  // v2: alpha renamed only (same hash), beta's content changed, gamma new.
  fetched.length = 0
  published.set('alpha', { ...published.get('alpha')!, name: 'Alpha renamed', version: 2 })
  published.set('beta', full('beta', '# Beta v2\n', { version: 2 }))
  published.set('gamma', full('gamma', '# Gamma\n'))
  t.equal(await skills.applyCatalog(catalogOf(2), fetchSkill), 2)
  t.same(fetched.sort(), ['beta', 'gamma'], 'only changed and new content is fetched')
  const cat2 = new Map((await skills.catalog(operatorActor())).map((c) => [c.key, c]))
  t.equal(cat2.get('alpha')!.name, 'Alpha renamed', 'descriptor changes are applied without a fetch')
  t.equal(cat2.get('beta')!.contentHash, published.get('beta')!.contentHash)
  t.equal(cat2.get('beta')!.hasFiles, false)
  const alphaCopy = await api.call('GET', `/api/skills/${first.skill.id}`)
  t.match(alphaCopy.body.skill, { name: 'Alpha renamed', version: 2, sourceType: 'tower' }, 'squad copies follow the catalog')
  const betaCopy = (await api.call('GET', `/api/squads/${other.squadId}/skills`)).body.skills[0]
  t.match(betaCopy, { key: 'beta', version: 2, contentHash: published.get('beta')!.contentHash })

  // The same version again fetches nothing; an older one changes nothing.
  fetched.length = 0
  t.equal(await skills.applyCatalog(catalogOf(2), fetchSkill), 2)
  t.same(fetched, [], 'a repeated pull fetches nothing')
  published.delete('gamma')
  t.equal(await skills.applyCatalog(catalogOf(1), fetchSkill), 2, 'an older pull is ignored')
  t.ok(
    (await skills.catalog(operatorActor())).some((c) => c.key === 'gamma'),
    'and removes nothing',
  )

  // v3: beta unpublished, delta's content unsafe, epsilon vanishes between list and fetch.
  published.delete('beta')
  published.set('delta', full('delta', '# Delta\n', { files: [{ path: '../escape.sh', content: 'x', encoding: 'utf8' }] }))
  const catalog3 = catalogOf(3)
  const { markdown: _em, files: _ef, ...epsilon } = full('epsilon', '# E\n')
  catalog3.skills.push(epsilon)
  fetched.length = 0
  t.equal(await skills.applyCatalog(catalog3, fetchSkill), 3)
  t.same(fetched.sort(), ['delta', 'epsilon'])
  t.same(
    (await skills.catalog(operatorActor())).map((c) => c.key),
    ['alpha'],
    'unpublished, unsafe and vanished skills are not kept',
  )
  t.same((await api.call('GET', `/api/squads/${other.squadId}/skills`)).body.skills, [], "the squads' copies of an unpublished skill go too")
  t.same(
    (await api.call('GET', `/api/squads/${s.squadId}/skills`)).body.skills.map((x: any) => [x.key, x.sourceType]),
    [
      ['alpha', 'tower'],
      ['beta', 'local'],
    ],
    'local skills are untouched',
  )

  // A failing fetch stores nothing and keeps the applied version.
  published.set('zeta', full('zeta', '# Z\n'))
  await t.rejects(
    skills.applyCatalog(catalogOf(4), async () => {
      throw new Error('tower down')
    }),
    /tower down/,
  )
  t.equal(await skills.appliedCatalogVersion(), 3)
  await t.rejects(skills.applyCatalog({ catalogVersion: -1, skills: [] }, fetchSkill), { name: 'TypeError' }, 'a malformed catalog is refused')

  // Edited locally, a tower copy becomes the instance's own and no longer follows the catalog.
  const edited = await api.call('PATCH', `/api/skills/${first.skill.id}`, { markdown: '# Alpha, our way\n' })
  t.match(edited.body.skill, { sourceType: 'local', version: 3 })
  published.set('alpha', full('alpha', '# Alpha v3\n', { version: 3 }))
  await skills.applyCatalog(catalogOf(5), fetchSkill)
  t.equal((await api.call('GET', `/api/skills/${first.skill.id}`)).body.skill.markdown, '# Alpha, our way\n')

  const actions = (await activityOf(api, other.squadId, 'entityType=skill')).map((a) => a.action).reverse()
  t.same(actions, ['skill.installed', 'skill.updated_from_tower', 'skill.removed_by_tower'])
  // Seven in all: the first squad's install, local create, catalog update and edit; the other squad's three.
  const upserts = (await skillUpserts(api, 7)).filter((u) => u.squadLocalId === other.squadId)
  t.same(
    upserts.map((u) => u.sourceType),
    ['tower', 'tower', 'deleted'],
    'installs, catalog updates and removals reach the outbox',
  )
  t.same(Object.keys(upserts[0]).sort(), ['description', 'entityId', 'key', 'kind', 'localId', 'name', 'sourceType', 'squadId', 'squadLocalId', 'trustLevel', 'type', 'updatedAt'])
})

let managed = true
const towerDouble: TowerClient = {
  name: 'test-tower',
  start: async () => undefined,
  close: async () => undefined,
  managesSkills: () => managed,
  refreshSkills: async () => undefined,
}

eachBackend(
  t,
  'skills: while the tower manages skills, local writes answer 409 and installs still work',
  async (t, api) => {
    managed = false
    const s = await api.seed('Managed')
    const local = await createSkill(api, s.squadId, { key: 'before' })
    managed = true
    const dir = await tempDir(t)
    await writeFile(join(dir, 'x.md'), '# x\n')
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/skills`, { key: 'new', name: 'n', markdown: 'm' }), 409, 'skills_managed_by_tower', 'create')
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/skills/import`, { source: join(dir, 'x.md') }), 409, 'skills_managed_by_tower', 'import')
    isError(t, await api.call('PATCH', `/api/skills/${local.id}`, { name: 'x' }), 409, 'skills_managed_by_tower', 'edit')
    isError(t, await api.call('DELETE', `/api/skills/${local.id}`), 409, 'skills_managed_by_tower', 'delete')
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/skills`, { key: 'new', name: 'n', markdown: 'm' }, s.agentToken), 403, 'forbidden', 'an agent still gets 403')
    t.equal((await api.call('GET', `/api/squads/${s.squadId}/skills`)).body.skills.length, 1, 'reads still work')
    t.equal((await api.call('GET', `/api/skills/${local.id}`, undefined, s.agentToken)).status, 200)

    await api.instance.services.skills.applyCatalog(
      {
        catalogVersion: 9,
        skills: [
          {
            key: 'Fleet.Skill',
            slug: 'fleet-skill',
            name: 'Fleet skill',
            trustLevel: 'official',
            version: 4,
            contentHash: skillContentHash('# F\n', []),
            hasFiles: false,
            updatedAt: new Date().toISOString(),
          },
        ],
      },
      async (key) => ({
        key,
        slug: 'fleet-skill',
        name: 'Fleet skill',
        trustLevel: 'official',
        version: 4,
        contentHash: skillContentHash('# F\n', []),
        hasFiles: false,
        updatedAt: new Date().toISOString(),
        markdown: '# F\n',
        files: [],
      }),
    )
    const installed = await api.call('POST', '/api/tower/skills/Fleet.Skill/install', { squadId: s.squadId })
    t.equal(installed.status, 200, 'installing from the catalog works while managed')
    t.match(installed.body.skill, { key: 'Fleet.Skill', sourceType: 'tower', trustLevel: 'official', version: 4, markdown: '# F\n' })
    t.same((await api.call('GET', `/api/squads/${s.squadId}/skills`)).body.skills.map((x: any) => x.key).sort(), ['Fleet.Skill', 'before'])
    isError(t, await api.call('DELETE', `/api/skills/${installed.body.skill.id}`), 409, 'skills_managed_by_tower', "installed skills are the tower's too")

    managed = false
    t.equal((await api.call('PATCH', `/api/skills/${local.id}`, { name: 'after' })).status, 200, 'standalone again: local authoring is back')
    const renamed = await api.call('PATCH', `/api/skills/${installed.body.skill.id}`, { name: 'Ours now' })
    t.equal(renamed.status, 200, 'a tower copy (catalog key rules) can be edited once standalone')
    t.match(renamed.body.skill, { key: 'Fleet.Skill', name: 'Ours now', sourceType: 'local', trustLevel: 'official', version: 5 })
    t.equal((await api.call('DELETE', `/api/skills/${installed.body.skill.id}`)).status, 200)
  },
  { tower: towerDouble },
)
