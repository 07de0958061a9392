/** What a {@link DueSchedule} keeps on each of its entries. */
export interface Scheduled {
  /** When the entry is due (set by `add`). */
  due: number;
  /** Its place in the schedule; -1 when it is not in one. Start it at -1. */
  slot: number;
  /** Among entries due at the same moment, the one added first comes first. */
  order: number;
}

/**
 * Entries by the moment they are due, earliest first: a binary heap whose entries know their place, so that moving
 * or removing any of them costs O(log n). The inbox keeps its conversations waiting out a quiet window in one, under
 * a single timer.
 */
export class DueSchedule<T extends Scheduled> {
  readonly #heap: T[] = [];
  #added = 0;

  /** The entry due first, if any. */
  get first(): T | undefined {
    return this.#heap[0];
  }

  /** Puts `entry` in the schedule, due at `due`; an entry already in it moves. */
  add(entry: T, due: number): void {
    this.remove(entry);
    entry.due = due;
    entry.order = this.#added++;
    entry.slot = this.#heap.length;
    this.#heap.push(entry);
    this.#siftUp(entry.slot);
  }

  /** Takes `entry` out of the schedule; nothing when it is not in it. */
  remove(entry: T): void {
    const slot = entry.slot;
    if (slot < 0) return;
    entry.slot = -1;
    const last = this.#heap.pop()!;
    if (last === entry) return;
    this.#heap[slot] = last;
    last.slot = slot;
    this.#siftDown(slot);
    this.#siftUp(last.slot);
  }

  #before(a: T, b: T): boolean {
    return a.due < b.due || (a.due === b.due && a.order < b.order);
  }

  #siftUp(slot: number): void {
    const heap = this.#heap;
    const entry = heap[slot]!;
    while (slot > 0) {
      const parentSlot = (slot - 1) >> 1;
      const parent = heap[parentSlot]!;
      if (!this.#before(entry, parent)) break;
      heap[slot] = parent;
      parent.slot = slot;
      slot = parentSlot;
    }
    heap[slot] = entry;
    entry.slot = slot;
  }

  #siftDown(slot: number): void {
    const heap = this.#heap;
    const entry = heap[slot]!;
    for (;;) {
      const left = 2 * slot + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && this.#before(heap[right]!, heap[left]!) ? right : left;
      if (!this.#before(heap[child]!, entry)) break;
      heap[slot] = heap[child]!;
      heap[slot]!.slot = slot;
      slot = child;
    }
    heap[slot] = entry;
    entry.slot = slot;
  }
}
