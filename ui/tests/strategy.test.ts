import type { ReasonCode } from '../src/lib/ipc/bindings/ReasonCode';
import type { RefusalCode } from '../src/lib/ipc/bindings/RefusalCode';
import { describe, expect, test } from 'vitest';
import { badgeTone, buttonStates, nextStep, reasonText, refusalEvidence, refusalText, situationOf } from '../src/lib/strategy';
import { setLocale } from '../src/lib/i18n/index.svelte';
import type { ButtonState } from '../src/lib/strategy';
import { reanudar, reprocesar, timbrada } from './fixtures';

function byAction(states: ButtonState[]) {
  return Object.fromEntries(states.map((s) => [s.action, s]));
}

describe('action buttons follow the strategy exactly', () => {
  test('Reanudar: Reintentar resumes; failover is refused naming the unknown outcome', () => {
    const s = byAction(buttonStates(reanudar, 'soporte'));
    expect(s.retry).toMatchObject({ visible: true, enabled: true, label: 'Reintentar · Reanudar' });
    // The hint says what happens for the business, not the mechanics.
    expect(s.retry.tooltip).toContain('no sale otra factura');
    expect(s.retry.tooltip).not.toContain('bytes');
    // Reprocesar is unavailable, and the tooltip says why and what it would risk; the evidence
    // that decides it goes to the technical detail.
    expect(s.retry.tooltip).toContain('No reprocesa: El PAC pudo haber timbrado');
    expect(s.retry.tooltip).toContain('podría sacar una segunda factura');
    expect(s.retry.tooltip).not.toContain('#7');
    expect(s.retry.evidence).toEqual(['#7 · Respuesta del PAC: sin respuesta clara timeout']);
    expect(s.failover).toMatchObject({ visible: true, enabled: false });
    expect(s.failover.tooltip).toContain('un envío terminó sin respuesta clara y nada lo ha aclarado');
    expect(s.failover.evidence.join(' ')).toContain('#7');
    expect(s.finalize.enabled).toBe(false);
    expect(s.finalize.tooltip).toBe('Todavía no hay CFDI.');
    // Not offered by the strategy at all: not shown.
    expect(s.send_to_contador.visible).toBe(false);
    // The forced failover is the contador's alone: soporte does not even see it.
    expect(s.force_failover.visible).toBe(false);
    expect(s.download_xml).toMatchObject({ visible: true, enabled: false });
  });

  test('the contador sees the forced failover, and it needs a note', () => {
    const s = byAction(buttonStates(reanudar, 'contador'));
    expect(s.force_failover).toMatchObject({ visible: true, enabled: true, needsNote: true });
    expect(s.verify_absent).toMatchObject({ visible: true, enabled: false, needsNote: true });
  });

  test('personal sees only what its role may do', () => {
    const visible = buttonStates(reanudar, 'personal').filter((b) => b.visible).map((b) => b.action);
    expect(visible).toEqual(['download_xml']);
  });

  test('Reprocesar: Reintentar says it reprocesses; failover refused because the document is the problem', () => {
    const s = byAction(buttonStates(reprocesar, 'soporte'));
    expect(s.retry).toMatchObject({ enabled: true, label: 'Reintentar · Reprocesar' });
    expect(s.retry.tooltip).toContain('No reanuda: Reenviar el mismo documento fallaría igual.');
    expect(s.failover.enabled).toBe(false);
    expect(s.failover.tooltip).toContain('otro PAC lo rechazaría igual');
    // Actions the strategy does not list are not shown at all.
    expect(s.finalize.visible).toBe(false);
  });

  test('Timbrada: only download; retry refused because a CFDI exists', () => {
    const s = byAction(buttonStates(timbrada, 'soporte'));
    expect(s.download_xml.enabled).toBe(true);
    expect(s.retry).toMatchObject({ visible: true, enabled: false, label: 'Reintentar' });
    expect(s.retry.tooltip).toContain('Ya existe un CFDI para esta venta. No sale otra factura.');
    expect(s.retry.evidence.join(' ')).toContain('#3');
  });

  test('labels and reasons switch to English', () => {
    setLocale('en');
    const s = byAction(buttonStates(reanudar, 'soporte'));
    expect(s.retry.label).toBe('Retry · Resume');
    expect(s.failover.tooltip).toContain('a send ended without a clear answer and nothing has settled it');
    expect(reasonText(reanudar.reasons[0])).toBe(
      'A send to sandbox ended without a clear answer; a CFDI may or may not exist.',
    );
  });
});

describe('badge and reasons', () => {
  test('tones', () => {
    expect(badgeTone('timbrada')).toBe('ok');
    expect(badgeTone('pendiente')).toBe('info');
    expect(badgeTone('reanudar')).toBe('warn');
    expect(badgeTone('duplicado')).toBe('bad');
    expect(badgeTone('atencion')).toBe('bad');
  });

  test('reasons in plain words, with their parameters', () => {
    expect(reasonText(reanudar.reasons[0])).toBe(
      'Un envío a sandbox terminó sin respuesta clara; puede o no existir un CFDI.',
    );
    // The PAC's code waits in the technical detail; its message is the reason.
    expect(reasonText(reprocesar.reasons[0])).toBe('sw rechazó el documento: Fecha fuera de rango.');
    expect(reasonText(timbrada.reasons[0])).toBe('Timbrada por sw con UUID 5FB2822E-396D-4725-8521-CDC4BDD20CCF.');
    // The proven-absent attempt is the one the evidence names (the live one, not an abandoned one).
    expect(reasonText({ code: 'comprobado_sin_cfdi', evidence_id: 12, params: { attempt_no: 2, pac: 'finkok' } })).toBe(
      'Se comprobó que el intento 2 no produjo CFDI.',
    );
    // Missing facts leave no empty parentheses.
    expect(reasonText({ code: 'pac_no_disponible', evidence_id: null, params: { pac: 'sw', outcome: null, code: null } })).toBe(
      'sw no estuvo disponible y no recibió nada: se puede volver a enviar sin riesgo.',
    );
  });

  test('an unknown code is never shown as nothing', () => {
    // A code from a newer Rust than this UI (the types forbid it at build time).
    expect(reasonText({ code: 'algo_nuevo' as ReasonCode, evidence_id: null, params: {} })).toBe('algo_nuevo');
    // A refusal says it in general words; its code and evidence are technical detail.
    expect(refusalText({ code: 'otra_cosa' as RefusalCode, evidence_id: 4, evidence: 'x' })).toBe('La evidencia no permite esta acción.');
    expect(refusalEvidence({ code: 'otra_cosa' as RefusalCode, evidence_id: 4, evidence: 'x' })).toBe('#4 · x');
    expect(refusalText(null)).toBe('La evidencia no permite esta acción.');
  });
});

describe('state in words and the next step', () => {
  test('every badge has a state in words; the strategy stays underneath', () => {
    expect(situationOf('timbrada')).toBe('timbrada');
    expect(situationOf('reanudar')).toBe('en_proceso');
    expect(situationOf('finalizar')).toBe('en_proceso');
    expect(situationOf('respaldo')).toBe('en_proceso');
    expect(situationOf('reprocesar')).toBe('rechazada');
    expect(situationOf('atencion')).toBe('decision');
    expect(situationOf('duplicado')).toBe('decision');
    expect(situationOf('cancelada')).toBe('cancelada');
    expect(situationOf('pendiente', 'held')).toBe('en_espera');
  });

  test('a next step only where a person can act, as one sentence', () => {
    expect(nextStep('timbrada', 'timbrada')).toBeNull();
    expect(nextStep('pendiente', 'pendiente')).toBeNull();
    expect(nextStep('cancelada', 'todos_cancelados')).toBeNull();
    expect(nextStep('reanudar', 'resultado_desconocido')).toBe('Timbra está confirmando con el PAC; no se duplicará.');
    expect(nextStep('atencion', 'rechazo_tras_resultado_desconocido')).toContain('Decide el contador: puede haber una segunda factura');
    expect(nextStep('atencion', 'max_intentos')).toContain('no sale otra factura');
    expect(nextStep('timbrada', 'timbrada', true)).toContain('Decide el contador');
  });
});
