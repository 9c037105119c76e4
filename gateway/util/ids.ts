import { randomBytes } from 'node:crypto';

/** A prefixed random id such as `acc_3f9a…`; 96 bits, so collisions are not a concern. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}
