import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { createRequire } from 'node:module';
import { z } from 'zod';
import { defineTool, type LocalTool } from '../tools/define-tool.js';

/** The few SQLite calls the salon uses, the same in `node:sqlite` and better-sqlite3. */
interface SalonDatabase {
  exec(sql: string): void;
  prepare(sql: string): { run(...params: unknown[]): { changes: number }; all(...params: unknown[]): unknown[]; get(...params: unknown[]): unknown };
  close(): void;
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS services (id INTEGER PRIMARY KEY, name TEXT NOT NULL, minutes INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS masters (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS clients (user_id TEXT PRIMARY KEY);
  CREATE TABLE IF NOT EXISTS appointments (
    id INTEGER PRIMARY KEY,
    user_id TEXT NOT NULL,
    service_id INTEGER NOT NULL REFERENCES services(id),
    master_id INTEGER NOT NULL REFERENCES masters(id),
    starts_at TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'booked'
  );
  INSERT OR IGNORE INTO services (id, name, minutes) VALUES (1, 'Haircut', 45), (2, 'Manicure', 60), (3, 'Colouring', 120);
  INSERT OR IGNORE INTO masters (id, name) VALUES (1, 'Anna'), (2, 'Olga'), (3, 'Marco');
`;

export interface SalonTools {
  readonly tools: LocalTool[];
  close(): void;
}

/**
 * The salon example's tools over its own small SQLite file (not Palaver's database). Every tool acts for the user
 * Palaver bound to the turn (`ctx.userId`); no tool takes a user id from the model. A person seen for the first
 * time gets two upcoming demo appointments, so there is something to cancel.
 */
export function createSalonTools(options: { file: string; now?: () => Date }): SalonTools {
  const now = options.now ?? (() => new Date());
  mkdirSync(dirname(options.file), { recursive: true });
  const db = openSalonDatabase(options.file);
  db.exec(SCHEMA);

  const welcome = (userId: string) => {
    if (db.prepare('INSERT OR IGNORE INTO clients (user_id) VALUES (?)').run(userId).changes === 0) return;
    const day = (days: number) => new Date(now().getTime() + days * 86_400_000).toISOString().slice(0, 10);
    const book = db.prepare('INSERT INTO appointments (user_id, service_id, master_id, starts_at) VALUES (?, ?, ?, ?)');
    book.run(userId, 1, 1, `${day(2)} 10:00`);
    book.run(userId, 2, 2, `${day(5)} 15:30`);
  };
  const own = (userId: string, id: number) =>
    db.prepare("SELECT id FROM appointments WHERE id = ? AND user_id = ? AND status = 'booked'").get(id, userId) !== undefined;

  const tools = [
    defineTool({
      name: 'get_my_appointments',
      description: "The person's upcoming appointments: a JSON list of {id, description}.",
      input: z.object({}),
      run: (_args, ctx) => {
        welcome(ctx.userId);
        const rows = db
          .prepare(
            `SELECT a.id, s.name AS service, m.name AS master, a.starts_at FROM appointments a
             JOIN services s ON s.id = a.service_id JOIN masters m ON m.id = a.master_id
             WHERE a.user_id = ? AND a.status = 'booked' ORDER BY a.starts_at`,
          )
          .all(ctx.userId) as { id: number; service: string; master: string; starts_at: string }[];
        return rows.map((row) => ({ id: row.id, description: `${row.service} with ${row.master}, ${row.starts_at}` }));
      },
    }),
    defineTool({
      name: 'cancel_appointment_by_id',
      focusIds: { appointment_id: 'appointment' },
      description: "Cancels one of the person's appointments by its id (from the hidden context).",
      input: z.object({ appointment_id: z.number().int().positive().describe('Id of the appointment, from the hidden context') }),
      // A cancellation is asked first: the person sees which appointment, in the salon's words, and says yes.
      approval: 'person',
      describe: ({ appointment_id }) => {
        const row = db
          .prepare(
            `SELECT s.name AS service, m.name AS master, a.starts_at FROM appointments a
             JOIN services s ON s.id = a.service_id JOIN masters m ON m.id = a.master_id WHERE a.id = ?`,
          )
          .get(appointment_id) as { service: string; master: string; starts_at: string } | undefined;
        return row === undefined ? `Cancel appointment ${appointment_id}` : `Cancel your ${row.service} with ${row.master} on ${row.starts_at}`;
      },
      run: ({ appointment_id }, ctx) => {
        if (!own(ctx.userId, appointment_id)) throw new Error(`No booked appointment ${appointment_id} for this person.`);
        db.prepare("UPDATE appointments SET status = 'cancelled' WHERE id = ?").run(appointment_id);
        return `Appointment ${appointment_id} is cancelled.`;
      },
    }),
    defineTool({
      name: 'reschedule_appointment_by_id',
      focusIds: { appointment_id: 'appointment' },
      description: "Moves one of the person's appointments to another date and time.",
      input: z.object({
        appointment_id: z.number().int().positive().describe('Id of the appointment, from the hidden context'),
        date: z
          .string()
          .regex(/^\d{4}-\d{2}-\d{2}$/)
          .describe('New date, YYYY-MM-DD'),
        time: z
          .string()
          .regex(/^([01]\d|2[0-3]):[0-5]\d$/)
          .describe('New time, HH:MM (24 h)'),
      }),
      run: ({ appointment_id, date, time }, ctx) => {
        if (!own(ctx.userId, appointment_id)) throw new Error(`No booked appointment ${appointment_id} for this person.`);
        db.prepare('UPDATE appointments SET starts_at = ? WHERE id = ?').run(`${date} ${time}`, appointment_id);
        return `Appointment ${appointment_id} is moved to ${date} ${time}.`;
      },
    }),
  ];
  return { tools, close: () => db.close() };
}

/**
 * `node:sqlite` where Node has it (22.5+), as Palaver's own store does; better-sqlite3, loaded only here, on Node 20.
 * On Node 24, better-sqlite3's statements can abort the process when the garbage collector finalizes them after
 * their database closed (a Node assertion in the addon's destructor), and the salon prepares a statement per call.
 */
function openSalonDatabase(file: string): SalonDatabase {
  const nodeSqlite = process.getBuiltinModule?.('node:sqlite') as { DatabaseSync: new (file: string) => SalonDatabase } | undefined;
  if (nodeSqlite) return new nodeSqlite.DatabaseSync(file);
  const Database = createRequire(import.meta.url)('better-sqlite3') as new (file: string) => SalonDatabase;
  return new Database(file);
}
