// Light or dark: the OS's choice (`prefers-color-scheme`) unless this computer chose one in
// Ajustes › Idioma y apariencia (kept like the language, in this webview's storage). The
// resolved theme is `data-theme` on <html>; app.css holds both palettes.
export type ThemeChoice = 'system' | 'light' | 'dark';

const STORAGE_KEY = 'timbra.theme';
const DARK = '(prefers-color-scheme: dark)';

function stored(): ThemeChoice {
  try {
    const v = globalThis.localStorage?.getItem(STORAGE_KEY);
    return v === 'light' || v === 'dark' ? v : 'system';
  } catch {
    return 'system';
  }
}

let choice = $state<ThemeChoice>(stored());

function osDark(): boolean {
  return typeof matchMedia === 'function' && matchMedia(DARK).matches;
}

/** The theme the screen shows for a choice (system: the OS's). */
export function resolveTheme(c: ThemeChoice, dark: boolean): 'light' | 'dark' {
  return c === 'system' ? (dark ? 'dark' : 'light') : c;
}

function apply(): void {
  if (typeof document === 'undefined') return;
  document.documentElement.dataset.theme = resolveTheme(choice, osDark());
}

export function getTheme(): ThemeChoice {
  return choice;
}

export function setTheme(c: ThemeChoice): void {
  choice = c;
  try {
    globalThis.localStorage?.setItem(STORAGE_KEY, c);
  } catch {
    /* a locked-down storage only loses the preference */
  }
  apply();
}

/** Applies the stored choice and follows the OS's changes while the choice is Sistema. */
export function startTheme(): void {
  apply();
  if (typeof matchMedia === 'function') matchMedia(DARK).addEventListener?.('change', apply);
}
