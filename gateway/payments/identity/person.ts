// A person's name and date of birth as they travel in NEFT and IMPS messages and to the
// Income Tax Department.
//
// Names: the sending bank writes the beneficiary's and the remitter's name into the NEFT
// message (SFMS, SWIFT's "X" character set: Latin letters, digits, space and / - ? : ( ) . , ' +)
// and the IMPS request (ISO 8583, ASCII); what falls outside is refused or mangled by the bank
// after our customer was charged. A name here is what every one of them carries: Latin
// letters, spaces, and . ' - between them, at most 50 characters (IMPS beneficiary name),
// starting with a letter. No digits, no control characters (a NUL ends a C string in a bank's
// switch), no other script (Devanagari is typed in Latin letters, as the bank holds it).

export const NAME_MAX_CHARS = 50;
const NAME_PATTERN = /^[A-Za-z][A-Za-z .'-]*$/;

/** A name with its runs of spaces made one, trimmed. */
export function normalizeName(input: string): string {
  return input.replace(/ {2,}/g, ' ').trim();
}

/** Why `name` (normalized) is not a name NEFT and IMPS carry, or null. */
export function personNameError(name: string): string | null {
  if (name.length === 0) return 'must not be empty';
  if (name.length > NAME_MAX_CHARS) return `must be at most ${NAME_MAX_CHARS} characters`;
  // Checked first and named apart: a control character is a broken client or an attack.
  if (/\p{Cc}/u.test(name)) return 'must not hold control characters';
  if (!NAME_PATTERN.test(name))
    return "may hold Latin letters A–Z, spaces and . ' - only, starting with a letter (as the bank's records write it)";
  return null;
}

/** Why `value` is not a day of the calendar written YYYY-MM-DD (2023-02-30 is not one), or null. */
export function calendarDateError(value: string): string | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!match) return 'must be a date YYYY-MM-DD';
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  if (
    date.getUTCFullYear() !== year ||
    date.getUTCMonth() !== month - 1 ||
    date.getUTCDate() !== day
  )
    return `is not a day of the calendar (${value})`;
  return null;
}

/**
 * Why `dob` is not a date of birth, or null: a day of the calendar, not before 1900, and
 * before `today` (India's date, YYYY-MM-DD: kernel/india-time.ts).
 */
export function dateOfBirthError(dob: string, today: string): string | null {
  const error = calendarDateError(dob);
  if (error) return error;
  if (dob < '1900-01-01') return 'must not be before 1900';
  if (dob >= today) return 'must be in the past';
  return null;
}
