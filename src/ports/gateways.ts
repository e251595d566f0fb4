/** The gateways sharing one database (docs/deploy.md "Several gateways"), and the secrets they must agree on. */

/** What a gateway says of itself at each heartbeat. */
export interface GatewayReport {
  /** Runs active on it now. */
  activeRuns: number;
  /** Its lanes: runs active, sessions waiting for a slot, the cap (lane caps hold per gateway). */
  lanes: Record<string, { active: number; waiting: number; max: number }>;
  /** The newest journal event it has published to its streams and waiters. */
  publishedSeq: number;
}

export interface GatewayRecord {
  id: string;
  pid: number;
  host: string;
  /** Where its control API listens, once it does. */
  url: string | null;
  version: string;
  startedAt: number;
  heartbeatAt: number;
  /** Set by a clean stop; a gateway that died keeps null and its heartbeat ages. */
  stoppedAt: number | null;
  report: GatewayReport;
  /** Sessions whose lease it holds now, by the database clock. */
  sessionsHeld: number;
}

export interface GatewayRegistry {
  /** Records a gateway as started (again, for a known id: its previous life's stop and report are replaced). */
  register(gateway: { id: string; pid: number; host: string; version: string }, now: number): Promise<void>;
  /** Its control API's address, once it listens. */
  setUrl(id: string, url: string): Promise<void>;
  heartbeat(id: string, report: GatewayReport, now: number): Promise<void>;
  stopped(id: string, now: number): Promise<void>;
  /** Every gateway that ever registered, newest heartbeat first. */
  list(): Promise<GatewayRecord[]>;
  /**
   * A secret every gateway on the database shares: the first to ask stores `initial`, and every later caller (on
   * any gateway) gets that one back.
   */
  sharedSecret(name: string, initial: string): Promise<string>;
  /** The shared entry of that name, or undefined when no gateway stored one (nothing is stored by asking). */
  sharedSecretOf(name: string): Promise<string | undefined>;
}
