import { describe, expect, test } from 'vitest';
import { render, screen, waitFor } from '@testing-library/svelte';
import Timeline from '../src/components/Timeline.svelte';
import { setLocale } from '../src/lib/i18n/index.svelte';
import type { TimelineEntry } from '../src/lib/ipc/bindings/TimelineEntry';

const RAW = 'error sending request for url (http://127.0.0.1:41234/v4/cfdi33/stamp/v2): operation timed out';

const entries: TimelineEntry[] = [
  {
    at: '2026-11-30T12:00:00Z',
    source: 'try',
    ref_id: 1,
    kind: 'stamp',
    actor: { name: 'app-32535', role: 'sistema' },
    detail: { attempt_id: 1, try_no: 1, pac: 'sandbox', worker: 'app-32535', fencing_token: 3 },
    said: [{ code: 'try_stamp', params: { pac: 'sandbox', try_no: '1' } }],
  },
  {
    at: '2026-11-30T12:00:05Z',
    source: 'evidence',
    ref_id: 2,
    kind: 'pac_response',
    actor: { name: 'app-32535', role: 'sistema' },
    detail: { attempt_id: 1, try_id: 1, outcome: 'unknown', code: null, message: RAW, uuid: null, detail: { exchanges: [] } },
    said: [
      { code: 'outcome_unknown', params: { pac: 'sandbox' } },
      { code: 'transport_timeout', params: {} },
    ],
  },
  {
    at: '2026-11-30T12:01:00Z',
    source: 'event',
    ref_id: 3,
    kind: 'action_forbidden',
    actor: { name: 'Ana', role: 'personal' },
    detail: { action: 'force_failover', reason: 'rol', role: 'personal' },
    said: [],
  },
];

describe('Timeline', () => {
  test('says outcomes and transport failures in words; the raw text is folded', async () => {
    render(Timeline, { entries });
    const tl = screen.getByTestId('timeline');
    const items = tl.querySelectorAll('li');
    // The words, outside the folded detail.
    const said = [...tl.querySelectorAll('.said')].map((p) => p.textContent ?? '').join(' ');
    expect(said).toContain('Envío n.º 1 a sandbox.');
    expect(said).toContain('Sin respuesta clara de sandbox');
    expect(said).toContain('el PAC no contestó a tiempo');
    expect(said).not.toContain('unknown');
    expect(said).not.toContain('timed out');
    // The worker is Timbra, not its process id; a person keeps name and role.
    expect(items[0].querySelector('[data-testid=actor]')?.textContent).toBe('Timbra (automático)');
    expect(items[2].querySelector('[data-testid=actor]')?.textContent).toBe('Ana · Personal');
    // Codes of events are translated too.
    expect(items[2].textContent).toContain('Forzar PAC de respaldo');
    expect(items[2].textContent).toContain('el rol no puede hacerlo');
    // Everything outside <details> has no raw text; the details keep it.
    for (const li of items) {
      const clone = li.cloneNode(true) as HTMLElement;
      clone.querySelectorAll('details').forEach((d) => d.remove());
      expect(clone.textContent).not.toMatch(/error sending|operation timed out|unknown|app-32535/);
    }
    // Folded: not even in the text until opened.
    const tech = items[1].querySelector('details')!;
    expect(tech.open).toBe(false);
    expect(items[1].textContent).not.toContain(RAW);
    tech.open = true;
    tech.dispatchEvent(new Event('toggle'));
    await waitFor(() => expect(tech.textContent).toContain(RAW));
  });

  test('English when the UI is in English', () => {
    setLocale('en');
    render(Timeline, { entries });
    const text = screen.getByTestId('timeline').querySelector('li[data-kind=pac_response] .said')?.textContent ?? '';
    expect(text).toContain('No clear answer from sandbox');
    expect(text).toContain('the PAC did not answer in time');
    expect(screen.getByTestId('timeline').querySelector('[data-testid=actor]')?.textContent).toBe('Timbra (automatic)');
  });
});
