/* hash-cache.h: sync entry hashes remembered across diffs, so an unchanged
 * file is never read again.
 *
 * Keyed like git's index: a record holds the file's device, inode, size,
 * mtime and ctime (ns) and mode, plus the moment it was hashed. A lookup
 * trusts a record only when all of those still match the file's lstat() and
 * the file's mtime and ctime are older than that moment: a file changed in
 * the same clock tick as it was hashed could have changed after the hash
 * without changing its timestamps, so it is hashed again (git's "racy" rule).
 *
 * The cache is a hash table in a file (RUN_DIR/hash-cache), mapped while
 * open and unmapped when the last user closes it, so an idle boxd holds none
 * of it. Records are checksummed, so a torn write after a crash reads as a
 * miss, never as a wrong hash. Safe to use from several threads at once. */
#ifndef BOXD_HASH_CACHE_H
#define BOXD_HASH_CACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "entry-hash.h"

struct hash_cache;

/* Opens (creating if needed) the cache file at `path`; shares one mapping
 * between concurrent users. A damaged or foreign file is started afresh.
 * NULL (and a logged reason) only when the file cannot be made at all;
 * callers then hash without a cache. */
struct hash_cache *hash_cache_open(const char *path);
void hash_cache_close(struct hash_cache *cache);

/* Makes room for `records` records at once (a diff knows its entry count),
 * instead of doubling the table several times while it runs. */
void hash_cache_reserve(struct hash_cache *cache, unsigned long records);

/* The remembered hash of the file `st` describes, or false. */
bool hash_cache_lookup(struct hash_cache *cache, const struct stat *st,
		       unsigned char out[ENTRY_HASH_SIZE]);
/* Remembers `hash` for the file as `st` saw it; `hashed_at_ns` is the
 * CLOCK_REALTIME_COARSE time taken before the content was read (or written). */
void hash_cache_store(struct hash_cache *cache, const struct stat *st, int64_t hashed_at_ns,
		      const unsigned char hash[ENTRY_HASH_SIZE]);

/* CLOCK_REALTIME_COARSE in ns: the clock the kernel stamps files with. */
int64_t hash_cache_now_ns(void);

#endif
