// A result or a panel that opens where the person is not looking (a message at the top of the
// page after a click at the bottom, a form below the buttons) scrolls into view and takes the
// focus, so a screen reader reads it and typing lands in it. Used as `{@attach reveal}`.
export function reveal(el: HTMLElement): void {
  el.scrollIntoView?.({ block: 'nearest' });
  const field = el.querySelector<HTMLElement>('input:not([disabled]), textarea, select');
  if (field) {
    field.focus({ preventScroll: true });
    return;
  }
  if (!el.hasAttribute('tabindex')) el.tabIndex = -1;
  el.focus({ preventScroll: true });
}
