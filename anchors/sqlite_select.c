/* Anchor for sql/thread_select_by_id on SQLite: the op the harness times (BEGIN; the count of one
 * id with LIMIT 1; COMMIT, on prepared statements) as a bare C loop on one connection to a named
 * memdb database opened without a per-connection mutex, as the harness opens it.
 *
 * Usage: sqlite_select ROWS SECONDS       -> prints ops/s on one line.
 *        sqlite_select ROWS 0 OPS         -> runs exactly OPS ops (one op = the function `op`, for
 *                                            valgrind --tool=callgrind --toggle-collect=op) and
 *                                            prints OPS.
 * Built like for like by build-sqlite-anchor: the SQLite amalgamation rusqlite bundles, with the
 * -D flags libsqlite3-sys's build script passes, at -O3. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void check(int rc, sqlite3 *db) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
    fprintf(stderr, "sqlite: %s\n", sqlite3_errmsg(db));
    exit(1);
  }
}

static void seed(sqlite3 *db, int rows) {
  check(sqlite3_exec(db, "CREATE TABLE benchmark_users(id INTEGER PRIMARY KEY, username VARCHAR(128), "
                         "email VARCHAR(192), age INTEGER)", 0, 0, 0), db);
  check(sqlite3_exec(db, "BEGIN", 0, 0, 0), db);
  sqlite3_stmt *ins;
  check(sqlite3_prepare_v2(db, "INSERT INTO benchmark_users(username, email, age) VALUES (?, ?, ?)", -1, &ins, 0), db);
  char user[64], email[96];
  for (int i = 1; i <= rows; i++) {
    snprintf(user, sizeof user, "user-%d", i);
    snprintf(email, sizeof email, "user-%d@example.test", i);
    sqlite3_bind_text(ins, 1, user, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(ins, 2, email, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(ins, 3, 20 + i % 50);
    check(sqlite3_step(ins), db);
    sqlite3_reset(ins);
  }
  sqlite3_finalize(ins);
  check(sqlite3_exec(db, "COMMIT", 0, 0, 0), db);
}

/* One op: the statement is stepped to its end and reset, as rusqlite does. */
static long step(sqlite3 *db, sqlite3_stmt *s) {
  long value = 0;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) value = sqlite3_column_int64(s, 0);
  check(rc, db);
  sqlite3_reset(s);
  return value;
}

/* The harness's op: BEGIN; the count of one id; COMMIT. Not inlined, so that callgrind can count
 * exactly its instructions (--toggle-collect=op). */
__attribute__((noinline)) static long op(sqlite3 *db, sqlite3_stmt *begin, sqlite3_stmt *select,
                                         sqlite3_stmt *commit, long id) {
  step(db, begin);
  sqlite3_bind_int64(select, 1, id);
  long found = step(db, select);
  sqlite3_clear_bindings(select);
  step(db, commit);
  return found;
}

int main(int argc, char **argv) {
  int rows = argc > 1 ? atoi(argv[1]) : 1000;
  double seconds = argc > 2 ? atof(argv[2]) : 2.0;
  sqlite3 *db;
  check(sqlite3_open_v2("file:/anchor?vfs=memdb", &db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, 0), db);
  seed(db, rows);
  sqlite3_stmt *begin, *select, *commit;
  check(sqlite3_prepare_v2(db, "BEGIN", -1, &begin, 0), db);
  check(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM (SELECT 1 FROM benchmark_users WHERE id = ? LIMIT 1)", -1,
                           &select, 0), db);
  check(sqlite3_prepare_v2(db, "COMMIT", -1, &commit, 0), db);
  long ops = 0, found = 0, id = 0;
  if (argc > 3) {
    long count = atol(argv[3]);
    for (long k = 0; k < count; k++) {
      id = id % rows + 1;
      found += op(db, begin, select, commit, id);
    }
    if (found != count) {
      fprintf(stderr, "counted %ld rows in %ld ops: every seeded id must count one\n", found, count);
      return 1;
    }
    printf("%ld\n", count);
    return 0;
  }
  double start = now(), elapsed;
  do {
    for (int k = 0; k < 1000; k++) {
      id = id % rows + 1;
      found += op(db, begin, select, commit, id);
    }
    ops += 1000;
  } while ((elapsed = now() - start) < seconds);
  if (found != ops) {
    fprintf(stderr, "counted %ld rows in %ld ops: every seeded id must count one\n", found, ops);
    return 1;
  }
  printf("%.0f\n", ops / elapsed);
  return 0;
}
