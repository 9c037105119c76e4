// The tags the history indexes file records under, as the rooms describe them: the store
// knows how to number and pack a tag, the rooms know what the tags are (a payment
// transaction's services and statuses, the service an API log belongs to). The payments room
// supplies its description (payments/history-tags.ts) when the store is opened.
import type { HistoryRecord } from './state.js';

/**
 * What the history indexes tag records with. Each list's position is a code (index + 1; 0 is
 * "unknown") kept on disk in the JSON-file indexes and in PostgreSQL's `aihub.history.aux`:
 * the lists are append only, and a name never moves.
 */
export interface HistoryTags {
  /** The services of a payment transaction (its `service` field). At most TXN_SERVICES are coded. */
  readonly services: readonly string[];
  /** The statuses of a payment transaction (its `status` field). At most TXN_STATUSES are coded. */
  readonly statuses: readonly string[];
  /**
   * The service (one of `services`) an API log record belongs to, from its path; null when
   * the record does not say (an outbound call names its transaction instead).
   */
  logService(record: HistoryRecord): string | null;
}

/** A store opened without a description: every service and status is unknown (code 0). */
export const NO_HISTORY_TAGS: HistoryTags = {
  services: [],
  statuses: [],
  logService: () => null,
};

/** The HTTP methods of API log records, by code (index + 1), packed with the service code. */
export const METHOD_CODES = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'] as const;

/**
 * Tag codes of txn entries, counted per list so that a filtered total reads nothing: for the
 * first three statuses (service + 1) * 4 + status + 1, below FIRST_NEW_TAG (on disk since
 * the first index, never renumbered); for the statuses added later FIRST_NEW_TAG + (service
 * + 1) * 4 + (status - 3). A manifest's shorter tag arrays are read as zeros beyond their end.
 */
const FIRST_NEW_TAG = 20;
/** The number of txn tag codes (the length of a list's tag counts). */
export const TXN_TAGS = FIRST_NEW_TAG + 20;
/** The services and statuses the txn tag codes have room for; any beyond is coded 0 (unknown). */
export const TXN_SERVICES = 4;
export const TXN_STATUSES = 7;

/** A name's code in `names` (index + 1), 0 when it is not there or past `room`. */
function codeOf(names: readonly string[], name: string, room: number): number {
  const index = names.indexOf(name);
  return index === -1 || index >= room ? 0 : index + 1;
}

export const serviceCode = (tags: HistoryTags, service: string): number =>
  codeOf(tags.services, service, TXN_SERVICES);
export const statusCode = (tags: HistoryTags, status: string): number =>
  codeOf(tags.statuses, status, TXN_STATUSES);
export const methodCode = (method: string): number => codeOf(METHOD_CODES, method, 7);

/** The tag code of a payment transaction's service and status. */
export function txnTag(tags: HistoryTags, service: string, status: string): number {
  const service_code = serviceCode(tags, service);
  const status_index = statusCode(tags, status) - 1;
  return status_index < 3
    ? service_code * 4 + status_index + 1
    : FIRST_NEW_TAG + service_code * 4 + status_index - 3;
}

/** A txn tag's service code and status code (0: unknown). */
export function txnTagParts(tag: number): [service_code: number, status_code: number] {
  return tag < FIRST_NEW_TAG
    ? [Math.floor(tag / 4), tag % 4]
    : [Math.floor((tag - FIRST_NEW_TAG) / 4), ((tag - FIRST_NEW_TAG) % 4) + 4];
}

/** An API log record's method and service codes, packed: method * 8 + service (0: unknown). */
export function logAux(tags: HistoryTags, record: HistoryRecord): number {
  const service = tags.logService(record);
  return (
    methodCode(String(record.method)) * 8 + (service === null ? 0 : serviceCode(tags, service))
  );
}
