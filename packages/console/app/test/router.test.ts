import { describe, expect, it } from 'vitest'
import { href, parseHash } from '../src/lib/router'

const squad = '0190a000-0000-7000-8000-000000000001'
const issue = '0190a000-0000-7000-8000-000000000002'

describe('hash routes', () => {
  it('parses every page of a squad', () => {
    expect(parseHash('').route).toEqual({ name: 'home' })
    expect(parseHash('#/').route).toEqual({ name: 'home' })
    expect(parseHash(`#/squads/${squad}`).route).toEqual({ name: 'overview', squadId: squad })
    for (const name of ['issues', 'agents', 'runs', 'approvals', 'costs', 'activity', 'routines', 'secrets']) {
      expect(parseHash(`#/squads/${squad}/${name}`).route).toEqual({ name, squadId: squad })
    }
    expect(parseHash(`#/squads/${squad}/issues/${issue}`).route).toEqual({ name: 'issue', squadId: squad, id: issue })
    expect(parseHash(`#/squads/${squad}/runs/${issue}`).route).toEqual({ name: 'run', squadId: squad, id: issue })
  })

  it('refuses what is not a page', () => {
    expect(parseHash(`#/squads/${squad}/costs/${issue}`).route.name).toBe('not-found')
    expect(parseHash('#/nope').route).toEqual({ name: 'not-found', path: '/nope' })
  })

  it('keeps filters in the query and round-trips through href', () => {
    const h = href({ name: 'issues', squadId: squad }, { status: 'todo,blocked', q: 'fix bug', assignee: '', view: null })
    expect(h).toBe(`#/squads/${squad}/issues?status=todo%2Cblocked&q=fix+bug`)
    const back = parseHash(h)
    expect(back.route).toEqual({ name: 'issues', squadId: squad })
    expect(back.query.get('status')).toBe('todo,blocked')
    expect(back.query.get('q')).toBe('fix bug')
    expect(back.query.has('assignee')).toBe(false)
    expect(href({ name: 'issue', squadId: squad, id: issue })).toBe(`#/squads/${squad}/issues/${issue}`)
  })
})
