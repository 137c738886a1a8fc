import { describe, expect, test } from 'vitest';
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import Ajustes from '../src/pages/Ajustes.svelte';
import { session } from '../src/lib/session.svelte';
import type { AppStatusDto } from '../src/lib/ipc/bindings/AppStatusDto';
import type { Role } from '../src/lib/ipc/bindings/Role';

function status(role: Role): AppStatusDto {
  return {
    version: '0.1.0',
    mode: 'sandbox',
    database_path: '/tmp/t.db',
    emisor: {
      rfc: 'EKU9003173C9',
      nombre: 'ESCUELA KEMPER URGATE',
      regimen_fiscal: '601',
      lugar_expedicion: '42501',
      no_certificado: '30001000000500003416',
      certificate_valid_from: '2023-05-18T11:43:51Z',
      certificate_valid_to: '2027-05-18T11:43:51Z',
      test_csd: true,
    },
    pacs: { primary: { name: 'sandbox', pac: 'sandbox', environment: 'sandbox', url: '', user: '', has_credentials: true }, backup: null },
    drain: { concurrency: 2, max_tries: 5 },
    seat: { name: 'Yo', role: role === 'contador' ? 'soporte' : role, confirmed: true },
    operator: { name: 'Yo', role },
    database: { backend: 'sqlite', shown: '/tmp/t.db', source: 'environment', saved_postgres_url: null, has_password: false, restart_needed: false },
    drain_available: true,
    sandbox_pac_error: null,
    sandbox_fault: 'none',
    drain_error: null,
    drain_progress: null,
    startup_error: null,
  };
}

/** What every Ajustes render asks for besides the test's own commands. */
function defaults(cmd: string): unknown {
  if (cmd === 'role_locks')
    return [
      { role: 'contador', has_credential: false, unlocked_until: null },
      { role: 'soporte', has_credential: false, unlocked_until: null },
    ];
  if (cmd === 'live_workers') return [];
  return undefined;
}

describe('Ajustes', () => {
  test('a PAC is sent with its URL and credentials; Rust field errors land under their inputs', async () => {
    session.set(status('soporte'));
    const sent: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === 'save_pacs') {
        sent.push(args);
        throw { code: 'validation', details: { errors: [{ field: 'primary.url', code: 'formato', message: 'x' }] } };
      }
      if (cmd === 'app_status') return status('soporte');
      return defaults(cmd);
    });
    render(Ajustes, { section: 'pac' });
    const url = document.querySelector<HTMLInputElement>("input[name='primary.url']")!;
    await fireEvent.input(url, { target: { value: 'sw.example' } });
    await fireEvent.input(document.querySelector("input[name='primary.secret']")!, { target: { value: 'token-secreto' } });
    await fireEvent.submit(document.querySelector('[data-testid=pac-form]')!);
    await waitFor(() => expect(document.querySelector('[data-testid=pac-form] .field-error')?.textContent).toBe('Formato incorrecto.'));
    expect(sent[0]).toEqual({
      primary: { pac: 'sw', environment: 'pruebas', url: 'sw.example', user: '', secret: 'token-secreto', replace_open: false },
      backup: null,
    });
  });

  test('replacing a PAC with unresolved attempts asks first, then sends the acceptance', async () => {
    session.set(status('contador'));
    const sent: { primary: { replace_open: boolean } }[] = [];
    mockIPC((cmd, args) => {
      if (cmd === 'save_pacs') {
        const a = args as { primary: { replace_open: boolean } };
        sent.push(a);
        if (!a.primary.replace_open) throw { code: 'pac_has_open_attempts', details: { pac: 'sw-pruebas', attempts: 2, changed: 'url' } };
        return status('contador').pacs;
      }
      if (cmd === 'app_status') return status('contador');
      return defaults(cmd);
    });
    render(Ajustes, { section: 'pac' });
    await fireEvent.input(document.querySelector("input[name='primary.url']")!, { target: { value: 'https://otro.example' } });
    await fireEvent.input(document.querySelector("input[name='primary.secret']")!, { target: { value: 't' } });
    await fireEvent.submit(document.querySelector('[data-testid=pac-form]')!);
    await waitFor(() => expect(document.querySelector('[role=alert]')?.textContent).toContain('2 intento(s) sin resolver'));
    const box = document.querySelector<HTMLInputElement>('[data-testid=replace-open] input')!;
    await fireEvent.click(box);
    await fireEvent.submit(document.querySelector('[data-testid=pac-form]')!);
    await waitFor(() => expect(sent).toHaveLength(2));
    expect(sent.map((s) => s.primary.replace_open)).toEqual([false, true]);
  });

  test('the sandbox fault selector drives the simulator', async () => {
    session.set(status('soporte'));
    const faults: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === 'set_sandbox_fault') {
        faults.push(args);
        return (args as { fault: string }).fault;
      }
      if (cmd === 'app_status') return status('soporte');
      return defaults(cmd);
    });
    render(Ajustes, { section: 'pac' });
    await fireEvent.change(document.querySelector('[data-testid=sandbox-fault]')!, { target: { value: 'timeout_after_certify' } });
    await waitFor(() => expect(faults).toEqual([{ fault: 'timeout_after_certify' }]));
  });

  test('personal reads the settings but may not change them', () => {
    session.set(status('personal'));
    mockIPC((cmd) => defaults(cmd));
    for (const [section, id] of [['emisor', 'emisor-form'], ['pac', 'pac-form'], ['pac', 'drain-form'], ['correo', 'smtp-form']]) {
      render(Ajustes, { section });
      const fieldsets = document.querySelectorAll<HTMLFieldSetElement>(`[data-testid=${id}] fieldset`);
      expect(fieldsets.length, id).toBeGreaterThan(0);
      fieldsets.forEach((f) => expect(f.disabled, id).toBe(true));
    }
    expect(document.querySelector('.ajustes')?.textContent).toContain('solo lectura');
  });

  test("this desk's name and role are saved on this computer; the contador is not among the roles", async () => {
    session.set(status('personal'));
    const sent: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === 'save_seat') {
        sent.push(args);
        const a = args as { seat: { name: string } };
        if (!a.seat.name.trim()) throw { code: 'validation', details: { errors: [{ field: 'seat.name', code: 'texto_invalido', message: 'x' }] } };
        return { name: a.seat.name.trim(), role: 'soporte', confirmed: true };
      }
      if (cmd === 'app_status') return status('soporte');
      return defaults(cmd);
    });
    render(Ajustes);
    const form = document.querySelector('[data-testid=seat-form]')!;
    const roles = [...form.querySelectorAll<HTMLOptionElement>("select[name='seat.role'] option")].map((o) => o.value);
    expect(roles).toEqual(['personal', 'soporte']);
    const name = form.querySelector<HTMLInputElement>("input[name='seat.name']")!;
    expect(name.value).toBe('Yo');
    await fireEvent.input(name, { target: { value: ' ' } });
    await fireEvent.submit(form);
    await waitFor(() => expect(form.querySelector('.field-error')?.textContent).toBe('Texto inválido.'));
    await fireEvent.input(name, { target: { value: 'Lucía Pérez' } });
    await fireEvent.change(form.querySelector("select[name='seat.role']")!, { target: { value: 'soporte' } });
    await fireEvent.submit(form);
    await waitFor(() => expect(form.querySelector('[role=status]')?.textContent).toContain('a nombre de Lucía Pérez'));
    expect(sent[1]).toEqual({ seat: { name: 'Lucía Pérez', role: 'soporte' } });
  });

  test("the first contador PIN takes the CSD key's password (sandbox says SAT's test one); a wrong proof changes nothing", async () => {
    session.set(status('personal'));
    const sent: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === 'set_role_pin') {
        sent.push(args);
        const a = args as { proof: { secret: string } };
        if (a.proof.secret !== '12345678a') throw { code: 'forbidden', details: { action: 'fijar la credencial', role: 'contador' } };
        return [
          { role: 'contador', has_credential: true, unlocked_until: null },
          { role: 'soporte', has_credential: false, unlocked_until: null },
        ];
      }
      return defaults(cmd);
    });
    render(Ajustes);
    const form = document.querySelector<HTMLFormElement>('[data-testid=role-pin-form]')!;
    await waitFor(() => expect(form.querySelector('[data-testid=role-pin-status]')?.textContent).toContain('nadie puede actuar como contador'));
    // Without a PIN there is no current one to prove with.
    expect(form.querySelector<HTMLInputElement>("input[value=current_pin]")!.disabled).toBe(true);
    expect(form.querySelector('[data-testid=role-pin-sandbox-hint]')?.textContent).toContain('12345678a');
    const type = async (n: string, v: string) => fireEvent.input(form.querySelector(`input[name='${n}']`)!, { target: { value: v } });
    await type('pin.new', '482913');
    await type('pin.repeat', '482914');
    await type('pin.proof', 'adivinada');
    await fireEvent.submit(form);
    await waitFor(() => expect(form.querySelector('.field-error')?.textContent).toBe('Los dos PIN no coinciden.'));
    expect(sent).toHaveLength(0);
    await type('pin.repeat', '482913');
    await fireEvent.submit(form);
    await waitFor(() => expect(form.querySelector('[data-testid=role-pin-error]')?.textContent).toBe('La prueba no es correcta: el PIN no cambió.'));
    await type('pin.proof', '12345678a');
    await fireEvent.submit(form);
    await waitFor(() => expect(form.querySelector('[role=status]')?.textContent).toBe('PIN del rol Contador guardado.'));
    expect(sent[1]).toEqual({ role: 'contador', pin: '482913', proof: { kind: 'csd_password', secret: '12345678a' } });
    expect(form.querySelector('[data-testid=role-pin-status]')?.textContent).toBe('Tiene PIN.');
  });

  test("the team's database: a URL without password, the connection tried, saved for the next start", async () => {
    const st = status('soporte');
    session.set(structuredClone(st));
    const calls: [string, unknown][] = [];
    mockIPC((cmd, args) => {
      calls.push([cmd, args]);
      if (cmd === 'test_database') {
        const a = args as { password: string | null };
        if (a.password !== 's3cr3t') throw { code: 'db_auth', details: { path: 'postgres://timbra@db.caja:5432/timbra', detail: 'x' } };
        return { location: 'postgres://timbra@db.caja:5432/timbra', server_version: '17.2', schema_version: null, latest_version: 7 };
      }
      if (cmd === 'save_database') {
        const a = args as { database: { postgres_url: string | null } };
        if (a.database.postgres_url?.includes(':s3cr3t@'))
          throw { code: 'validation', details: { errors: [{ field: 'database.postgres_url', code: 'contrasena_en_url', message: 'x' }] } };
        return { ...st.database, saved_postgres_url: a.database.postgres_url, has_password: true, restart_needed: true };
      }
      // A fresh object, as IPC answers (never one the session already holds).
      if (cmd === 'app_status')
        return { ...structuredClone(st), database: { ...st.database, saved_postgres_url: 'postgres://timbra@db.caja:5432/timbra', has_password: true, restart_needed: true } };
      return defaults(cmd);
    });
    render(Ajustes, { section: 'base' });
    const form = document.querySelector<HTMLFormElement>('[data-testid=database-form]')!;
    expect(form.querySelector('[data-testid=database-shown]')?.textContent).toBe('/tmp/t.db');
    expect(form.querySelector('[data-testid=database-env]')?.textContent).toContain('TIMBRA_DATABASE_URL');
    await fireEvent.click(form.querySelector('[data-testid=database-team]')!);
    const url = await waitFor(() => form.querySelector<HTMLInputElement>("input[name='database.postgres_url']")!);
    await fireEvent.input(url, { target: { value: 'postgres://timbra:s3cr3t@db.caja:5432/timbra' } });
    await fireEvent.submit(form);
    await waitFor(() => expect(form.querySelector('.field-error')?.textContent).toBe('La contraseña no va en la URL: escríbala en su campo.'));
    await fireEvent.input(url, { target: { value: 'postgres://timbra@db.caja:5432/timbra' } });
    await fireEvent.click(form.querySelector('[data-testid=database-test]')!);
    await waitFor(() =>
      expect(form.querySelector('[data-testid=database-error]')?.textContent).toBe(
        'El servidor de la base de datos postgres://timbra@db.caja:5432/timbra rechazó el usuario o la contraseña.',
      ),
    );
    await fireEvent.input(form.querySelector("input[name='database.password']")!, { target: { value: 's3cr3t' } });
    await fireEvent.click(form.querySelector('[data-testid=database-test]')!);
    await waitFor(() => expect(form.querySelector('[data-testid=database-probe]')?.textContent).toContain('La base está vacía'));
    await fireEvent.submit(form);
    await waitFor(() => expect(form.querySelector('[role=status]')?.textContent).toBe('Guardado. El cambio se aplica al reiniciar Timbra.'));
    expect(calls.filter(([c]) => c === 'save_database').at(-1)?.[1]).toEqual({
      database: { postgres_url: 'postgres://timbra@db.caja:5432/timbra', password: 's3cr3t' },
    });
    await waitFor(() => expect(form.querySelector('[data-testid=database-restart]')).not.toBeNull());
  });

  test('each section is its own page; an unknown one is Este equipo', () => {
    session.set(status('soporte'));
    mockIPC((cmd) => defaults(cmd));
    render(Ajustes, { section: 'nada' });
    const links = [...document.querySelectorAll<HTMLAnchorElement>('[data-testid=ajustes-sections] a')];
    expect(links.map((a) => a.getAttribute('href'))).toEqual([
      '#/ajustes/equipo',
      '#/ajustes/emisor',
      '#/ajustes/emisores',
      '#/ajustes/pac',
      '#/ajustes/base',
      '#/ajustes/respaldos',
      '#/ajustes/correo',
      '#/ajustes/listas',
      '#/ajustes/apariencia',
      '#/ajustes/acerca',
    ]);
    expect(document.querySelector('[aria-current=page]')?.textContent).toBe('Este equipo');
    expect(document.querySelector('[data-testid=seat-form]')).not.toBeNull();
    expect(document.querySelector('[data-testid=pac-form]')).toBeNull();
  });

  test('a section stays hidden, keeping its place, until every part has its first answer', async () => {
    session.set(status('soporte'));
    let answer: (v: unknown) => void = () => {};
    mockIPC((cmd) => {
      if (cmd === 'role_locks') return new Promise((r) => (answer = r));
      return defaults(cmd);
    });
    render(Ajustes, { section: 'equipo' });
    const body = document.querySelector<HTMLElement>('[data-testid=settings-section]')!;
    await new Promise((r) => setTimeout(r, 20));
    expect(body.dataset.ready).toBe('false');
    expect(body.classList.contains('settling')).toBe(true);
    answer(defaults('role_locks'));
    await waitFor(() => expect(body.dataset.ready).toBe('true'));
    expect(body.classList.contains('settling')).toBe(false);
  });
});
