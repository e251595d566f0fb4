/**
 * A multicast segment inside the test process: every datagram one socket sends reaches every socket on the bus,
 * itself included, as multicast does with loopback on. Loopback carries no multicast on many hosts (this one
 * included), so tests give these sockets to multicast-dns (`socket`, with `multicast: false`).
 */
import { EventEmitter } from 'node:events';

export class MdnsBus {
  private readonly sockets = new Set<BusSocket>();

  socket(): BusSocket {
    return new BusSocket(this.sockets);
  }
}

let nextPort = 40_000;

class BusSocket extends EventEmitter {
  private readonly port = nextPort++;

  constructor(private readonly sockets: Set<BusSocket>) {
    super();
  }

  bind(_port: number, _address: string | undefined, callback: () => void): void {
    this.sockets.add(this);
    setImmediate(() => {
      callback();
      this.emit('listening');
    });
  }

  address() {
    return { address: '127.0.0.1', family: 'IPv4', port: this.port };
  }

  send(message: Buffer, offset: number, length: number, _port: number, _address: string, callback?: (error: Error | null) => void): void {
    const datagram = Buffer.from(message.subarray(offset, offset + length));
    const rinfo = { address: '127.0.0.1', family: 'IPv4', port: this.port, size: length };
    for (const socket of this.sockets) setImmediate(() => socket.emit('message', datagram, rinfo));
    setImmediate(() => callback?.(null));
  }

  close(callback?: () => void): void {
    this.sockets.delete(this);
    setImmediate(() => callback?.());
  }

  setMulticastTTL(): void {}
  setMulticastLoopback(): void {}
  setMulticastInterface(): void {}
  addMembership(): void {}
  dropMembership(): void {}
}
