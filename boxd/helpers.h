/* helpers.h: where boxd finds its helper programs (boxd-shim, boxd-screen,
 * boxd-archive). */
#ifndef BOXD_HELPERS_H
#define BOXD_HELPERS_H

#include <spawn.h>

/* The path of helper `name` (caller frees): beside boxd's own executable
 * (an install that keeps them together, or the build tree's boxd/), then in
 * the build tree's program folders (shims/, boxd/screen/, boxd/archive/),
 * then BOXD_LIBEXECDIR. The environment variable
 * BOXD_HELPER_DIR, when set, is looked in first (for tests and debugging). */
char *helper_path(const char *name);

/* Initialises spawn attributes for a helper: no signal blocked and every
 * signal at its default, whatever boxd's own settings (the caller destroys
 * them with posix_spawnattr_destroy). */
void helper_spawn_attributes(posix_spawnattr_t *attributes);

#endif
