// Every tube of the in-memory engine: core/clients.ts's list of tubes and tube commands,
// with the tubes' jobs keeping them (Tube.unreferenced), and the paused tubes the timer
// unpauses.
import { TubeList } from "../clients.ts";
import { type Client, Tube } from "./model.ts";

export class Tubes extends TubeList<Tube, Client> {
  /** Paused tubes, for the timer to unpause. */
  readonly paused = new Set<Tube>();

  constructor() {
    super((name) => new Tube(name));
  }

  /** Remove t if nothing refers to it any more (a pause keeps nothing alive). Returns true if removed. */
  override dropIfUnused(t: Tube): boolean {
    if (!super.dropIfUnused(t)) return false;
    this.paused.delete(t);
    return true;
  }
}
