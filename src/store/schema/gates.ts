/** The gates' table types (ports/gates.ts). JSON columns hold text; times are integer milliseconds; costs are millionths of a dollar. */

export interface ApprovalsTable {
  id: string;
  kind: string;
  status: string;
  agent_id: string;
  session_key: string;
  run_id: string;
  step: number;
  call_index: number;
  tool_call_id: string | null;
  subject: string;
  args: string;
  details: string;
  reason: string;
  editable: number;
  on_expiry: string;
  requested_at: number | string;
  expires_at: number | string;
  decided_at: number | string | null;
  decided_by: string | null;
  note: string | null;
  edited_args: string | null;
}

export interface BudgetSpendTable {
  key: string;
  spent_tokens: number | string;
  spent_cost: number | string;
  raised_tokens: number | string | null;
  raised_cost: number | string | null;
  updated_at: number | string;
}

/** One reservation on one key: a model call's reservation has a row per cap it draws on. */
export interface BudgetHoldsTable {
  id: string;
  key: string;
  run_id: string;
  tokens: number | string;
  cost: number | string;
  expires_at: number | string;
}
