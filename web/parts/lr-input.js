// The learning-rate input of the health and run cards: the checkpoint does not store the rate,
// so the user types it; `onChange` runs on change and on Enter (the view reads the value).
import { el, testid } from '../dom.js';

/** {label, input}: the label 'learning rate ' holding the text input (its value `lr`, or empty). */
export function lrInput({ id, ariaLabel, lr, onChange }) {
  const label = el('label', 'meta', 'learning rate ');
  const input = testid(el('input'), id);
  input.type = 'text';
  input.inputMode = 'decimal';
  input.placeholder = 'e.g. 3e-4';
  input.value = lr === null ? '' : String(lr);
  input.setAttribute('aria-label', ariaLabel);
  input.addEventListener('change', onChange);
  input.addEventListener('keydown', (e) => e.key === 'Enter' && onChange());
  label.append(input);
  return { label, input };
}
