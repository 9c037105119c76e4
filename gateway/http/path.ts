// Request paths are decoded (decodeURIComponent) by Express's router for its path parameters
// and by the /v1 routes for a model id; a malformed escape (`%E0%A4%A`, a lone `%`, bytes
// that are not UTF-8) made that throw, and every route with a parameter answered 500
// (issue #13, finding 3). Both lanes check the path once, here, before any route sees it.
import { badRequest } from './errors.js';

/** Throws a 400 (in the surface's shape, by the lane's error handler) when a %-escape of the path does not decode. */
export function assertWellFormedPath(path: string): void {
  if (!path.includes('%')) return;
  try {
    decodeURIComponent(path);
  } catch {
    throw badRequest(
      'the request path has a malformed %-escape (each % must start a UTF-8 byte as two hex digits)',
      null,
      'invalid_path',
    );
  }
}
