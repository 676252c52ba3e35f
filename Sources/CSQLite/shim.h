// SQLite 3 from the system (Debian: libsqlite3-dev; pkg-config sqlite3).
#ifndef HUB_CSQLITE_SHIM_H
#define HUB_CSQLITE_SHIM_H

#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift does not import.
static inline sqlite3_destructor_type hub_sqlite_transient(void) { return SQLITE_TRANSIENT; }

#endif
