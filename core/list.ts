// An intrusive doubly linked FIFO: the entries carry their own links, so a list costs no
// node objects (beanstalkd's ms/job lists). One type for every such list of either engine:
// a tube's buried jobs, a connection's reservations, a tube's waiting connections.

/** Something that can be on one intrusive list at a time. */
export interface Linked<T> {
  prev: T | null;
  next: T | null;
}

export class List<T extends Linked<T>> {
  head: T | null = null;
  tail: T | null = null;
  size = 0;

  push(x: T): void {
    x.prev = this.tail;
    x.next = null;
    if (this.tail) this.tail.next = x;
    else this.head = x;
    this.tail = x;
    this.size++;
  }

  remove(x: T): void {
    if (x.prev) x.prev.next = x.next;
    else this.head = x.next;
    if (x.next) x.next.prev = x.prev;
    else this.tail = x.prev;
    x.prev = x.next = null;
    this.size--;
  }
}
