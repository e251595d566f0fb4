/** The gates' vocabulary (docs/gates.md), shared by the store, the control API and the CLI. */
export const APPROVAL_STATUSES = ['pending', 'approved', 'denied', 'expired'] as const;
