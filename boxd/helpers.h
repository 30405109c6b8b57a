/* helpers.h: where boxd finds its helper programs (boxd-shim, boxd-screen,
 * boxd-archive). */
#ifndef BOXD_HELPERS_H
#define BOXD_HELPERS_H

/* The path of helper `name` (caller frees): beside boxd's own executable
 * (an install that keeps them together, or the build tree's boxd/), then in
 * the build tree's shims/, then BOXD_LIBEXECDIR. The environment variable
 * BOXD_HELPER_DIR, when set, is looked in first (for tests and debugging). */
char *helper_path(const char *name);

#endif
