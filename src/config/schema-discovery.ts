/** DNS-SD on the LAN: advertising the exposed agents (`a2a.server.mdns`) and browsing for peers (`a2a.discovery`). */
import { z } from 'zod';

/** `true`, `false`, or `{ pi, interface }`; read as `{ enabled, pi, interface? }`. */
export const serverMdns = z
  .union([
    z.boolean(),
    z.strictObject({
      enabled: z.boolean().default(true),
      /** Also advertise `_pi-a2a._tcp`, the service Pi's A2A peers browse for. */
      pi: z.boolean().default(false),
      /** The address of the one interface to advertise on (default: every interface). */
      interface: z.string().min(1).optional(),
    }),
  ])
  .default(false)
  .transform((value) => (typeof value === 'boolean' ? { enabled: value, pi: false, interface: undefined } : value));

export const discoverySection = z
  .strictObject({
    /** `switchboard a2a discover` browses the LAN for `_a2a._tcp` and `_pi-a2a._tcp` peers. */
    mdns: z.boolean().default(false),
    /** How long one browse listens for answers. */
    seconds: z.number().positive().max(60).default(3),
    /** The address of the one interface to browse on (default: every interface). */
    interface: z.string().min(1).optional(),
  })
  .prefault({});
