import type { StrategyDto } from '../src/lib/ipc/bindings/StrategyDto';
import { describe, expect, test, vi } from 'vitest';
import { fireEvent, render, screen } from '@testing-library/svelte';
import StrategyPanel from '../src/components/StrategyPanel.svelte';
import { action, reanudar, timbrada } from './fixtures';

function button(action: string): HTMLButtonElement {
  const b = document.querySelector<HTMLButtonElement>(`button[data-action=${action}]`);
  if (!b) throw new Error(`no button ${action}`);
  return b;
}

describe('StrategyPanel', () => {
  test('shows the badge, the reasons and buttons enabled only where allowed', () => {
    render(StrategyPanel, { strategy: reanudar, role: 'soporte', onaction: vi.fn() });
    expect(document.querySelector('[data-badge]')?.getAttribute('data-badge')).toBe('reanudar');
    // The state in words and the next step, apart.
    expect(document.querySelector('[data-badge]')?.textContent).toBe('En proceso');
    expect(screen.getByTestId('next-step').textContent).toBe('Timbra está confirmando con el PAC; no se duplicará.');
    expect(screen.getByTestId('reasons').textContent).toContain('sin respuesta clara');
    expect(button('retry').disabled).toBe(false);
    expect(button('retry').textContent).toBe('Reintentar · Reanudar');
    expect(button('failover').disabled).toBe(true);
    expect(button('failover').parentElement?.getAttribute('title')).not.toContain('#7');
    expect(document.querySelector('[data-why=failover]')?.textContent).toContain('un envío terminó sin respuesta clara y nada lo ha aclarado');
    expect(document.querySelector('button[data-action=force_failover]')).toBeNull();
    expect(document.querySelector('button[data-action=verify_absent]')).toBeNull();
  });

  test('the allowed actions lead; refused ones fold into ¿Por qué no puedo…? with their reasons', () => {
    render(StrategyPanel, { strategy: timbrada, role: 'soporte', onaction: vi.fn() });
    const lead = screen.getByTestId('actions-lead');
    expect([...lead.querySelectorAll('button[data-action]')].map((b) => b.getAttribute('data-action'))).toEqual(['download_xml']);
    const whyNot = screen.getByTestId('why-not') as HTMLDetailsElement;
    expect(whyNot.open).toBe(false);
    expect(whyNot.querySelector('summary')?.textContent).toBe('¿Por qué no puedo…?');
    expect(whyNot.querySelector('button[data-action=retry]')).not.toBeNull();
    expect(whyNot.querySelector('[data-why=retry]')?.textContent).toContain('Ya existe un CFDI para esta venta');
  });

  test('a click asks Rust for the action; busy disables everything', async () => {
    const onaction = vi.fn();
    const { rerender } = render(StrategyPanel, { strategy: timbrada, role: 'soporte', onaction });
    await fireEvent.click(button('download_xml'));
    expect(onaction).toHaveBeenCalledWith('download_xml', null);
    await fireEvent.click(button('retry'));
    expect(onaction).toHaveBeenCalledTimes(1);
    await rerender({ strategy: timbrada, role: 'soporte', onaction, busy: true });
    expect(button('download_xml').disabled).toBe(true);
  });

  test("the contador's forced failover requires a written note", async () => {
    const onaction = vi.fn();
    render(StrategyPanel, { strategy: reanudar, role: 'contador', onaction });
    await fireEvent.click(button('force_failover'));
    expect(onaction).not.toHaveBeenCalled();
    const confirm = screen.getByText('Confirmar') as HTMLButtonElement;
    expect(confirm.disabled).toBe(true);
    const note = document.querySelector<HTMLTextAreaElement>('#force-note')!;
    await fireEvent.input(note, { target: { value: 'SW caído 3 h; quedan 5 h de la ventana. Revisaré el portal de SW.' } });
    expect(confirm.disabled).toBe(false);
    await fireEvent.click(confirm);
    expect(onaction).toHaveBeenCalledWith('force_failover', 'SW caído 3 h; quedan 5 h de la ventana. Revisaré el portal de SW.', null);
  });

  test('Encontré el CFDI needs the UUID and a note; the XML is optional', async () => {
    const onaction = vi.fn();
    const atencion: StrategyDto = {
      badge: 'atencion',
      reasons: [{ code: 'rechazo_tras_resultado_desconocido', evidence_id: 9, params: { attempt_no: 1, pac: 'sw', code: '401' } }],
      actions: [
        { action: 'record_found', allowed: true, retry_mode: null, refusal: null, alternative_refusal: null, roles: ['contador'] },
        { action: 'reprocess_accepting_risk', allowed: true, retry_mode: null, refusal: null, alternative_refusal: null, roles: ['contador'] },
      ],
      fecha_at_risk: false,
      open_questions: [1],
    };
    render(StrategyPanel, { strategy: atencion, role: 'contador', onaction });
    expect(screen.getByTestId('reasons').textContent).toContain('el rechazo no prueba que no exista el primer CFDI');
    await fireEvent.click(button('record_found'));
    const confirm = screen.getByText('Confirmar') as HTMLButtonElement;
    await fireEvent.input(document.querySelector('#force-note')!, { target: { value: 'Portal de SW, búsqueda por RFC' } });
    expect(confirm.disabled).toBe(true);
    await fireEvent.input(document.querySelector('#found-uuid')!, { target: { value: ' 5fb2822e-396d-4725-8521-cdc4bdd20ccf ' } });
    expect(confirm.disabled).toBe(false);
    await fireEvent.click(confirm);
    expect(onaction).toHaveBeenCalledWith('record_found', 'Portal de SW, búsqueda por RFC', {
      attempt_no: null,
      uuid: '5fb2822e-396d-4725-8521-cdc4bdd20ccf',
      xml: null,
    });
  });

  test('Enviar al contador: personal and soporte only, a note required, refused once Timbrada', async () => {
    const send = action({ action: 'send_to_contador', allowed: true, roles: ['personal', 'soporte'] });
    const withSend = { ...reanudar, actions: [...reanudar.actions, send] };
    const onaction = vi.fn();
    const { unmount } = render(StrategyPanel, { strategy: withSend, role: 'personal', onaction });
    expect(button('send_to_contador').textContent).toBe('Enviar al contador');
    expect(button('send_to_contador').disabled).toBe(false);
    expect(document.querySelector('[data-why=send_to_contador]')?.textContent).toContain('no cambia su estado');
    await fireEvent.click(button('send_to_contador'));
    expect(onaction).not.toHaveBeenCalled();
    expect(screen.getByTestId('note-required').textContent).toContain('qué debe revisar el contador');
    const confirm = screen.getByText('Confirmar') as HTMLButtonElement;
    expect(confirm.disabled).toBe(true);
    const note = document.querySelector<HTMLTextAreaElement>('#force-note')!;
    await fireEvent.input(note, { target: { value: 'El cliente dice que ya tiene otro CFDI de esta venta.' } });
    await fireEvent.click(confirm);
    expect(onaction).toHaveBeenCalledWith('send_to_contador', 'El cliente dice que ya tiene otro CFDI de esta venta.', null);
    unmount();

    // The contador does not see it.
    const second = render(StrategyPanel, { strategy: withSend, role: 'contador', onaction: vi.fn() });
    expect(document.querySelector('button[data-action=send_to_contador]')).toBeNull();
    second.unmount();

    // Timbrada: disabled, naming the evidence.
    const refused = action({
      action: 'send_to_contador',
      roles: ['personal', 'soporte'],
      refusal: { code: 'ya_timbrada', evidence_id: 3, evidence: 'pac_response: stamped 5FB2822E' },
    });
    render(StrategyPanel, {
      strategy: { ...timbrada, actions: [...timbrada.actions, refused] },
      role: 'soporte',
      onaction: vi.fn(),
    });
    expect(button('send_to_contador').disabled).toBe(true);
    expect(document.querySelector('[data-why=send_to_contador]')?.textContent).toContain('Ya está timbrada');
    expect(document.querySelector('[data-why=send_to_contador]')?.textContent).not.toContain('#3');
  });

  test('the evidence behind reasons and refusals waits behind Detalle técnico', async () => {
    render(StrategyPanel, { strategy: reanudar, role: 'soporte', onaction: vi.fn() });
    const tech = screen.getByTestId('strategy-technical') as HTMLDetailsElement;
    expect(tech.querySelector('summary')?.textContent).toBe('Detalle técnico');
    // Closed, it holds nothing but its summary.
    expect(tech.textContent?.trim()).toBe('Detalle técnico');
    tech.open = true;
    await fireEvent(tech, new Event('toggle'));
    expect(tech.textContent).toContain('#7');
    expect(tech.textContent).toContain('resultado_desconocido');
  });
});
