import t from 'tap'
import { Ajv } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { validate as validateOpenapi, compileErrors as openapiErrors } from '@readme/openapi-parser'
import { eachBackend } from './helpers/instance.js'

const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as typeof addFormatsModule
const httpMethods = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace']

/** Every route fastify registered, as `METHOD /path/{param}`, read from printRoutes' tree. */
function registeredRoutes(tree: string): string[] {
  const out: string[] = []
  const stack: string[] = []
  for (const line of tree.split('\n')) {
    const m = /^([│ ]*)[├└]── (.*?)(?: \(([^)]*)\))?$/.exec(line)
    if (!m) continue
    const depth = m[1]!.length / 4
    stack[depth] = m[2]!
    stack.length = depth + 1
    const path = stack.join('').replace(/:(\w+)/g, '{$1}')
    for (const method of (m[3] ?? '')
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean))
      out.push(`${method} ${path}`)
  }
  return out
}

/** Follows a local `#/a/b` pointer. */
function resolvePointer(doc: unknown, ref: string): unknown {
  return ref
    .slice(2)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>((node, key) => (node && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined), doc)
}

function refsIn(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const n of node) refsIn(n, out)
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.push(v)
      else refsIn(v, out)
    }
  }
  return out
}

eachBackend(t, 'openapi: a valid OpenAPI 3 document of every route', async (t, api) => {
  const res = await api.call('GET', '/api/openapi.json', undefined, null)
  t.equal(res.status, 200, 'served without a key')
  t.match(res.headers['content-type'], /application\/json/)
  const doc = res.body

  // Document structure (OpenAPI 3.1), checked by a maintained validator against the 3.1 schema.
  t.match(doc.openapi, /^3\.1\.\d+$/)
  const validation = await validateOpenapi(structuredClone(doc))
  t.ok(validation.valid, 'a valid OpenAPI 3.1 document', { errors: validation.valid ? undefined : openapiErrors(validation) })
  t.type(doc.info?.title, 'string')
  t.type(doc.info?.version, 'string')
  t.same(doc.components?.securitySchemes?.bearer, { type: 'http', scheme: 'bearer' })
  t.same(doc.security, [{ bearer: [] }])

  // Every registered route is documented, and the document lists nothing that is not served.
  const served = registeredRoutes(api.instance.app.printRoutes({ commonPrefix: false })).filter((r) => !r.startsWith('HEAD ') && !r.startsWith('OPTIONS ') && r !== 'GET /api/openapi.json')
  const documented: string[] = []
  for (const [path, item] of Object.entries<Record<string, unknown>>(doc.paths)) {
    for (const method of Object.keys(item).filter((k) => httpMethods.includes(k))) documented.push(`${method.toUpperCase()} ${path}`)
  }
  t.ok(served.length >= 40, `found ${served.length} routes`)
  t.same([...new Set(documented)].sort(), [...new Set(served)].sort(), 'documented routes = registered routes')
  for (const route of ['GET /api/squads', 'POST /api/issues/{id}/checkout', 'PUT /api/issues/{id}/documents/{key}', 'DELETE /api/operator-keys/{id}']) {
    t.ok(documented.includes(route), `documents ${route}`)
  }

  // Every operation has a readable, unique operationId (http/operation-ids.ts).
  const ids = new Map<string, string>()
  const unnamed: string[] = []
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const method of Object.keys(item).filter((k) => httpMethods.includes(k))) {
      const id = item[method].operationId
      const where = `${method.toUpperCase()} ${path}`
      if (typeof id !== 'string' || !/^[a-z][A-Za-z]+$/.test(id)) unnamed.push(where)
      else if (ids.has(id)) unnamed.push(`${where}: ${id} is also ${ids.get(id)}`)
      else ids.set(id, where)
    }
  }
  t.same(unnamed, [], 'every operation has its own operationId (add new routes to http/operation-ids.ts)')
  t.equal(ids.get('listIssues'), 'GET /api/squads/{squadId}/issues')
  t.equal(ids.get('checkoutIssue'), 'POST /api/issues/{id}/checkout')

  // Records are named components, and responses refer to them rather than repeat them.
  const names = Object.keys(doc.components.schemas)
  for (const name of [
    'Squad',
    'Agent',
    'Issue',
    'IssueDetail',
    'HeartbeatRun',
    'Approval',
    'Comment',
    'Goal',
    'Project',
    'Routine',
    'RoutineTrigger',
    'Secret',
    'CostEvent',
    'SquadBudget',
    'AgentBudget',
    'ActivityEntry',
    'ErrorBody',
  ]) {
    t.ok(names.includes(name), `components.schemas.${name}`)
  }
  t.same(doc.paths['/api/issues/{id}/checkout'].post.responses['200'].content['application/json'].schema.properties.issue, { $ref: '#/components/schemas/Issue' })
  t.same(
    doc.paths['/api/squads/{squadId}/dashboard'].get.responses['200'].content['application/json'].schema,
    { $ref: '#/components/schemas/DashboardSummary' },
    'a named whole response is a component too',
  )
  const errorProblems: string[] = []
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const method of Object.keys(item).filter((k) => httpMethods.includes(k))) {
      for (const [status, r] of Object.entries<any>(item[method].responses ?? {})) {
        const ref = r.content?.['application/json']?.schema?.$ref
        if (/^[45]/.test(status) && !(typeof ref === 'string' && ref.startsWith('#/components/schemas/'))) errorProblems.push(`${method.toUpperCase()} ${path} ${status}`)
      }
    }
  }
  t.same(errorProblems, [], 'every error response names its schema')

  // Each operation: path parameters declared, responses described with JSON schemas, bodies described.
  const problems: string[] = []
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
    const placeholders = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])
    for (const method of Object.keys(item).filter((k) => httpMethods.includes(k))) {
      const op = item[method]
      const where = `${method.toUpperCase()} ${path}`
      const declared = (op.parameters ?? []).filter((p: any) => p.in === 'path')
      for (const name of placeholders) {
        const p = declared.find((d: any) => d.name === name)
        if (!p || p.required !== true || !p.schema) problems.push(`${where}: path parameter ${name} not declared as required with a schema`)
      }
      for (const p of op.parameters ?? []) if (!['path', 'query', 'header', 'cookie'].includes(p.in) || typeof p.name !== 'string') problems.push(`${where}: bad parameter ${JSON.stringify(p)}`)
      const responses = Object.entries<any>(op.responses ?? {})
      if (!responses.length) problems.push(`${where}: no responses`)
      for (const [status, r] of responses) {
        if (!/^[1-5]\d\d$|^default$/.test(status)) problems.push(`${where}: response key ${status}`)
        if (typeof r.description !== 'string') problems.push(`${where} ${status}: no description`)
      }
      const ok = responses.filter(([status]) => status.startsWith('2'))
      if (!ok.length) problems.push(`${where}: no 2xx response`)
      // The one stream (Server-Sent Events) documents its messages instead.
      for (const [status, r] of ok) if (!(r.content?.['application/json'] ?? r.content?.['text/event-stream'])?.schema) problems.push(`${where} ${status}: no JSON schema`)
      const err = op.responses?.['404']?.content?.['application/json']?.schema
      if (path !== '/api/health' && (!err || err.$ref !== '#/components/schemas/ErrorBody')) problems.push(`${where}: 404 is not the ErrorBody`)
      if ((method === 'put' || method === 'patch') && !op.requestBody?.content?.['application/json']?.schema) problems.push(`${where}: no request body schema`)
    }
  }
  t.same(problems, [], 'every operation is fully described')

  const withBody = [
    '/api/squads',
    '/api/squads/{squadId}/agents',
    '/api/squads/{squadId}/issues',
    '/api/issues/{id}/checkout',
    '/api/issues/{id}/comments',
    '/api/issues/{id}/interactions',
    '/api/agents/{id}/keys',
    '/api/operator-keys',
    '/api/squads/{squadId}/activity',
  ]
  for (const path of withBody) {
    const schema = doc.paths[path]?.post?.requestBody?.content?.['application/json']?.schema
    t.ok(schema && (schema.type === 'object' || schema.$ref), `POST ${path} documents its body`)
  }
  const create = doc.paths['/api/squads/{squadId}/issues'].post.requestBody.content['application/json'].schema
  t.same(create.required, ['title'])
  t.equal(create.additionalProperties, false)
  t.ok(create.properties.blockedByIssueIds, 'body fields are listed')
  t.same(
    doc.paths['/api/squads/{squadId}/issues'].get.parameters
      .filter((p: any) => p.in === 'query')
      .map((p: any) => p.name)
      .sort(),
    ['assigneeAgentId', 'limit', 'offset', 'projectId', 'q', 'status'],
    'query parameters are listed',
  )

  // Every $ref resolves; every schema compiles; real answers match their documented schemas.
  const unresolved = [...new Set(refsIn(doc))].filter((ref) => !ref.startsWith('#/') || resolvePointer(doc, ref) === undefined)
  t.same(unresolved, [], 'every $ref resolves')
  const ajv = new Ajv({ strict: false, allErrors: true })
  addFormats(ajv)
  ajv.addSchema(doc, 'openapi')
  const compileErrors: string[] = []
  const validators = new Map<string, ReturnType<typeof ajv.compile>>()
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const method of Object.keys(item).filter((k) => httpMethods.includes(k))) {
      for (const [status, r] of Object.entries<any>(item[method].responses ?? {})) {
        if (!r.content?.['application/json']?.schema) continue
        const pointer = ['paths', path, method, 'responses', status, 'content', 'application/json', 'schema'].map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')
        try {
          validators.set(`${method.toUpperCase()} ${path} ${status}`, ajv.compile({ $ref: `openapi#/${pointer}` }))
        } catch (err) {
          compileErrors.push(`${method} ${path} ${status}: ${(err as Error).message}`)
        }
      }
    }
  }
  t.same(compileErrors, [], 'every response schema compiles')

  const s = await api.seed('Spec')
  const issue = (await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: 'checked', assigneeAgentId: s.agentId })).body.issue
  const samples: Array<[string, string, string, unknown?, string?]> = [
    ['GET', '/api/squads', '/api/squads'],
    ['GET', `/api/squads/${s.squadId}`, '/api/squads/{squadId}'],
    ['GET', `/api/squads/${s.squadId}/org`, '/api/squads/{squadId}/org'],
    ['GET', `/api/squads/${s.squadId}/agents`, '/api/squads/{squadId}/agents'],
    ['GET', `/api/agents/${s.agentId}`, '/api/agents/{id}'],
    ['GET', '/api/agents/me', '/api/agents/me', undefined, s.agentToken],
    ['GET', `/api/issues/${issue.id}`, '/api/issues/{id}'],
    ['POST', `/api/issues/${issue.id}/checkout`, '/api/issues/{id}/checkout', { agentId: s.agentId }],
    ['GET', `/api/squads/${s.squadId}/issues`, '/api/squads/{squadId}/issues'],
    ['GET', `/api/squads/${s.squadId}/activity`, '/api/squads/{squadId}/activity'],
    ['GET', '/api/issues/not-a-uuid', '/api/issues/{id}'],
  ]
  for (const [method, url, path, body, token] of samples) {
    const got = await api.call(method, url, body, token)
    const validate = validators.get(`${method} ${path} ${got.status}`)
    t.ok(validate, `${method} ${path} documents status ${got.status}`)
    if (validate) t.ok(validate(got.body), `${method} ${url.replace(/[0-9a-f-]{36}/g, ':id')} ${got.status} matches its schema`, { errors: validate.errors })
  }
})
