import { describe, expect, it } from 'vitest';
import { renderStatechart, type StatechartFormat } from '../../src/machines/statechart-formats.js';
import { apiFor, startApi } from './api-harness.js';

const api = apiFor({ scope: 'all' });

describe('GET /statechart', () => {
  it('answers the chart as JSON by default', async () => {
    const response = await fetch(`${api.url}/statechart`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await response.json()).toEqual(JSON.parse(await renderStatechart('json')));
  });

  it.each<[StatechartFormat, string]>([
    ['json', 'application/json; charset=utf-8'],
    ['mermaid', 'text/vnd.mermaid; charset=utf-8'],
    ['dot', 'text/vnd.graphviz; charset=utf-8'],
    ['svg', 'image/svg+xml; charset=utf-8'],
  ])('answers ?format=%s as %s', async (format, contentType) => {
    const response = await fetch(`${api.url}/statechart?format=${format}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe(contentType);
    expect(await response.text()).toBe(await renderStatechart(format));
  });

  it('shows the eviction delay the instance runs with', async () => {
    const graced = await startApi({ evictionGrace: 2_500 });
    try {
      const mermaid = await (await fetch(`${graced.url}/statechart?format=mermaid`)).text();
      expect(mermaid).toContain('disconnected --> evicted : after 2500ms (evictionGrace)');
      expect(await (await fetch(`${api.url}/statechart?format=mermaid`)).text()).toContain('after 10000ms (evictionGrace)');
    } finally {
      await graced.close();
    }
  });

  it.each([
    ['/statechart?format=png', 'format', 'format must be one of mermaid, dot, svg, json; got "png"'],
    ['/statechart?format=dot&format=svg', 'format', 'format may be given once'],
    ['/statechart?fromat=dot', 'fromat', 'unknown query parameter "fromat": this route takes format'],
  ])('refuses %s with 400 naming %s', async (path, field, reason) => {
    const response = await fetch(`${api.url}${path}`);
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ code: 'CHANCERY_API_INVALID_QUERY', field, reason });
  });
});
