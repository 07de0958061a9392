/** In-memory data behind the logistics example MCP server. Everything is keyed by the user id the host binds. */

export type LogisticsRole = 'client' | 'transporter';

export interface Cargo {
  readonly cargo_id: string;
  readonly owner_id: string;
  readonly from: string;
  readonly to: string;
  readonly weight_kg: number;
  readonly status: 'open';
}

export class LogisticsData {
  private readonly roles = new Map<string, LogisticsRole>();
  private readonly cargoes: Cargo[] = [];
  private nextCargo = 1;

  setRole(userId: string, role: LogisticsRole): void {
    this.roles.set(userId, role);
  }

  roleOf(userId: string): LogisticsRole | undefined {
    return this.roles.get(userId);
  }

  addCargo(userId: string, cargo: { from: string; to: string; weight_kg: number }): Cargo {
    const added: Cargo = { cargo_id: `C-${this.nextCargo++}`, owner_id: userId, ...cargo, status: 'open' };
    this.cargoes.push(added);
    return added;
  }

  cargoesOf(userId: string): readonly Cargo[] {
    return this.cargoes.filter((cargo) => cargo.owner_id === userId);
  }

  /** Open cargoes whose route matches; `from`/`to` match case-insensitively as substrings. */
  find(filter: { from?: string | undefined; to?: string | undefined }): readonly Cargo[] {
    const matches = (value: string, wanted: string | undefined): boolean => wanted === undefined || value.toLowerCase().includes(wanted.toLowerCase());
    return this.cargoes.filter((cargo) => matches(cargo.from, filter.from) && matches(cargo.to, filter.to));
  }
}
