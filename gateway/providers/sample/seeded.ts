// Deterministic stand-ins for the sandbox providers: the same input always gives the same
// reference, name or pick (a status check after a restart answers as before it), from a hash.
import { createHash } from 'node:crypto';

export function hashOf(text: string): bigint {
  return BigInt(`0x${createHash('sha256').update(text).digest('hex').slice(0, 15)}`);
}

export function digitsOf(text: string, count: number): string {
  return (hashOf(text) % 10n ** BigInt(count)).toString().padStart(count, '0');
}

export const FIRST_NAMES = [
  'Aarav',
  'Priya',
  'Rohan',
  'Ananya',
  'Vikram',
  'Meera',
  'Arjun',
  'Kavya',
  'Rahul',
  'Sneha',
  'Aditya',
  'Isha',
  'Karan',
  'Neha',
  'Siddharth',
  'Pooja',
];
export const SURNAMES = [
  'Agarwal',
  'Bose',
  'Chopra',
  'Desai',
  'Gupta',
  'Iyer',
  'Joshi',
  'Kapoor',
  'Mehta',
  'Nair',
  'Patel',
  'Rao',
  'Sharma',
  'Trivedi',
  'Verma',
  'Yadav',
];

export function pick<T>(list: readonly T[], seed: string): T {
  return list[Number(hashOf(seed) % BigInt(list.length))]!;
}

export function personName(seed: string): string {
  return `${pick(FIRST_NAMES, `first:${seed}`)} ${pick(SURNAMES, `last:${seed}`)}`.toUpperCase();
}
