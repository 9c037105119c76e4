// Server-rendered HTML without a template engine: a tagged template that escapes every
// interpolated value unless it is already Html (made by `html` itself or by `raw`).
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"'`]/g, (char) => ESCAPES[char]!);
}

export type Interpolation =
  Html | string | number | boolean | null | undefined | readonly Interpolation[];

function render(value: Interpolation): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/** `html\`<p>${user_input}</p>\`` escapes user_input; arrays are joined; null/undefined/false render nothing. */
export function html(strings: TemplateStringsArray, ...values: Interpolation[]): Html {
  let text = strings[0]!;
  for (let i = 0; i < values.length; i++) text += render(values[i]!) + strings[i + 1]!;
  return new Html(text);
}

/** Marks trusted markup (built by this module's callers from constants) as Html. */
export function raw(text: string): Html {
  return new Html(text);
}
