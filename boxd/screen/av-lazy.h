/* av-lazy.h: libavcodec and libavformat, loaded when first needed.
 *
 * A PNG shot needs neither (screen-png.c), but linking them made every
 * worker start map about 110 more libraries (x264, x265, vpx, dav1d, ...):
 * 60 to 100 ms and some 25 MiB before the first shot. So the worker is not
 * linked with them: av-lazy.c defines the few functions the JPEG encoder
 * and the recording call, each forwarding to the real one once loaded.
 * Everything else comes from libavutil and libswscale as usual. */
#ifndef BOXD_AV_LAZY_H
#define BOXD_AV_LAZY_H

#include <stdbool.h>
#include <stddef.h>

/* Loads both libraries and resolves every forwarded function (once; later
 * calls return at once). Call before any of them, on the thread that
 * starts the work (the recording thread only uses them after its start).
 * False with why in `error` when a library or function is missing. */
bool av_lazy_load(char *error, size_t error_size);

#endif
