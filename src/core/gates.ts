/** The gates' vocabulary (docs/gates.md), shared by the store, the control API and the CLI. */
/** `closed`: still unanswered, but the run that asked has ended (cancelled, failed, timed out), so nothing waits for it. */
export const APPROVAL_STATUSES = ['pending', 'approved', 'denied', 'expired', 'closed'] as const;
