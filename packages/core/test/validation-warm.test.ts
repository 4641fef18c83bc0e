import t from 'tap'
import { validatorCompiler, warmValidators } from '../src/http/validation.js'

// Ajv is made in idle time after listen (app.ts); the validators made afterwards are the same.
t.test('warming Ajv twice is harmless, and validators behave as before', async (t) => {
  warmValidators()
  warmValidators()
  const compile = validatorCompiler()
  const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] }
  const body = compile({ schema, httpPart: 'body', url: '/x', method: 'POST' } as never) as (d: unknown) => boolean
  const query = compile({ schema, httpPart: 'querystring', url: '/x', method: 'GET' } as never) as (d: unknown) => boolean
  t.equal(body({ n: 5 }), true)
  t.equal(body({ n: '5' }), false, 'bodies are strict')
  t.equal(query({ n: '5' }), true, 'query strings coerce')
  t.equal(body({ n: 1, s: 'a\0b' }), false, 'NUL refused')
})
