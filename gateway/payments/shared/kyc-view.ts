// An eKYC submission as its account (GET /api/kyc) and the admin's review (GET /admin/kyc)
// see it: the masked Aadhaar number, never the number or a document's content.
import type { KycSubmission } from '../engine/tables.js';

export function submissionView(submission: KycSubmission) {
  return {
    account_id: submission.account_id,
    status: submission.status,
    ...(submission.reason ? { reason: submission.reason } : {}),
    name: submission.name,
    aadhaar_number: submission.aadhaar_masked,
    pan_number: submission.pan_number,
    gstin: submission.gstin,
    address: submission.address ?? null,
    state: submission.state ?? null,
    documents: submission.documents.map((d) => ({
      id: d.id,
      kind: d.kind,
      filename: d.filename,
      content_type: d.content_type,
      size_bytes: d.size_bytes,
      sha256: d.sha256,
    })),
    submitted_at: submission.submitted_at,
    reviewed_at: submission.reviewed_at,
    submissions: submission.submissions,
  };
}
