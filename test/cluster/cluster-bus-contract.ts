import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ClusterBus, ClusterMessage } from '../../src/domain/ports/cluster-bus.js';
import { MAX_CLUSTER_MESSAGE_BYTES } from '../../src/domain/ports/cluster-bus.js';

/** How a suite reaches one kind of bus: processes on one database (or Redis) are buses opened by `open`. */
export interface BusFixture {
  /** Opens a bus as a new process would; `processes` says how many processes a test may open (local: one). */
  open(processId: string): Promise<ClusterBus>;
  /** Several processes share messages (false for the in-process bus: one bus is the whole world). */
  readonly networked: boolean;
  /** Cuts the listening connection of the bus of `processId` on the server's side; absent where there is none. */
  killListener?(processId: string): Promise<void>;
}

interface Received {
  readonly message: ClusterMessage;
  readonly from: string;
}

/** The contract every `ClusterBus` keeps: the local one, PostgreSQL LISTEN/NOTIFY and Redis pub/sub. */
export function clusterBusContract(name: string, fixture: BusFixture): void {
  describe(`ClusterBus contract: ${name}`, () => {
    const opened: ClusterBus[] = [];
    let counter = 0;
    const open = async (): Promise<ClusterBus> => {
      counter += 1;
      const bus = await fixture.open(`proc-${process.pid}-${Date.now()}-${counter}`);
      opened.push(bus);
      return bus;
    };
    /** Two processes where the bus is networked, else the one bus twice (its own listeners are its other process). */
    const pair = async (): Promise<[ClusterBus, ClusterBus]> => {
      const first = await open();
      return [first, fixture.networked ? await open() : first];
    };
    const listen = async (bus: ClusterBus, topic: string): Promise<{ received: Received[]; stop: () => Promise<void> }> => {
      const received: Received[] = [];
      const stop = await bus.subscribe(topic, (message, from) => received.push({ message, from }));
      return { received, stop };
    };

    afterEach(async () => {
      await Promise.all(opened.splice(0).map((bus) => bus.close()));
    });

    it('delivers a message to the listeners of its topic in every process, stamped with the publisher', async () => {
      const [publisher, other] = await pair();
      const there = await listen(other, 'cache');
      const here = await listen(publisher, 'cache');
      const elsewhere = await listen(other, 'reply');
      await publisher.publish('cache', { kind: 'history', sessionId: 's1' });
      await vi.waitFor(() => expect(there.received).toHaveLength(1));
      await vi.waitFor(() => expect(here.received).toHaveLength(1));
      expect(there.received[0]).toEqual({ message: { kind: 'history', sessionId: 's1' }, from: publisher.processId });
      // Its own message comes back too, recognisable by the id.
      expect(here.received[0]!.from).toBe(publisher.processId);
      expect(elsewhere.received).toEqual([]);
      if (fixture.networked) expect(other.processId).not.toBe(publisher.processId);
    });

    it("keeps one publisher's order, also when it does not wait for each publish", async () => {
      const [publisher, other] = await pair();
      const there = await listen(other, 'reply');
      const sent = Array.from({ length: 40 }, (_, index) => publisher.publish('reply', { index, delta: `part ${index} ` }));
      await Promise.all(sent);
      await vi.waitFor(() => expect(there.received).toHaveLength(40));
      expect(there.received.map(({ message }) => message['index'])).toEqual(Array.from({ length: 40 }, (_, index) => index));
    });

    it('refuses a message larger than the limit and carries one at the limit, unicode counted in bytes', async () => {
      const [publisher, other] = await pair();
      const there = await listen(other, 'reply');
      const overhead = JSON.stringify({ text: '' }).length;
      const atLimit = { text: 'x'.repeat(MAX_CLUSTER_MESSAGE_BYTES - overhead) };
      await publisher.publish('reply', atLimit);
      await expect(publisher.publish('reply', { text: 'x'.repeat(MAX_CLUSTER_MESSAGE_BYTES - overhead + 1) })).rejects.toThrow(/larger than 7000 bytes/);
      // 'é' is two bytes in UTF-8: under the limit in characters, over it in bytes.
      await expect(publisher.publish('reply', { text: 'é'.repeat(MAX_CLUSTER_MESSAGE_BYTES / 2) })).rejects.toThrow(/larger than/);
      await publisher.publish('reply', { text: 'after' });
      await vi.waitFor(() => expect(there.received).toHaveLength(2));
      expect(there.received[0]!.message).toEqual(atLimit);
      expect(there.received[1]!.message).toEqual({ text: 'after' });
    });

    it('refuses a topic that cannot be a channel name', async () => {
      const bus = await open();
      await expect(bus.subscribe('cache; drop table users', () => {})).rejects.toThrow(/not a cluster topic/);
      await expect(bus.publish('Cache', {})).rejects.toThrow(/not a cluster topic/);
    });

    it('stops delivering to a listener once it unsubscribed, and keeps delivering to the others', async () => {
      const [publisher, other] = await pair();
      const leaving = await listen(other, 'cache');
      const staying = await listen(other, 'cache');
      await publisher.publish('cache', { n: 1 });
      await vi.waitFor(() => expect(staying.received).toHaveLength(1));
      await vi.waitFor(() => expect(leaving.received).toHaveLength(1));
      await leaving.stop();
      await publisher.publish('cache', { n: 2 });
      await vi.waitFor(() => expect(staying.received).toHaveLength(2));
      expect(leaving.received).toHaveLength(1);
      // The last listener of a topic leaving, and a new one coming: the topic is listened to again.
      await staying.stop();
      const again = await listen(other, 'cache');
      await publisher.publish('cache', { n: 3 });
      await vi.waitFor(() => expect(again.received).toHaveLength(1));
      expect(again.received[0]!.message).toEqual({ n: 3 });
      expect(staying.received).toHaveLength(2);
    });

    it('refuses publish and subscribe once closed, closes twice without error, and no longer delivers', async () => {
      const [publisher, other] = await pair();
      const there = await listen(other, 'cache');
      await publisher.publish('cache', { before: true });
      await vi.waitFor(() => expect(there.received).toHaveLength(1));
      await other.close();
      await other.close();
      await expect(other.publish('cache', {})).rejects.toThrow(/closed/);
      await expect(other.subscribe('cache', () => {})).rejects.toThrow(/closed/);
      if (fixture.networked) {
        // The publisher goes on; a third process sees its messages, the closed one does not.
        const third = await listen(await open(), 'cache');
        await publisher.publish('cache', { after: true });
        await vi.waitFor(() => expect(third.received).toHaveLength(1));
      }
      expect(there.received).toHaveLength(1);
    });

    if (fixture.killListener) {
      const kill = fixture.killListener.bind(fixture);
      it('listens again after its listening connection is killed, tells its reconnect listeners, and messages flow again', async () => {
        const [publisher, other] = await pair();
        const there = await listen(other, 'cache');
        let reconnects = 0;
        other.onReconnect(() => (reconnects += 1));
        await publisher.publish('cache', { n: 1 });
        await vi.waitFor(() => expect(there.received).toHaveLength(1));
        await kill(other.processId);
        await vi.waitFor(() => expect(reconnects).toBe(1), { timeout: 10_000, interval: 50 });
        await publisher.publish('cache', { n: 2 });
        await vi.waitFor(() => expect(there.received.map(({ message }) => message['n'])).toEqual([1, 2]));
        // Its own publishing is unharmed too.
        const back = await listen(publisher, 'reply');
        await other.publish('reply', { from: 'the reconnected one' });
        await vi.waitFor(() => expect(back.received).toHaveLength(1));
      });
    }
  });
}
