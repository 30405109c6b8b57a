/* boxd.h: the daemon-wide context every service module may use. */
#ifndef BOXD_BOXD_H
#define BOXD_BOXD_H

#include <stdint.h>

#include "config.h"

struct event_base;

/* The one event loop; every module schedules its events on it. */
struct event_base *boxd_base(void);
const struct boxd_config *boxd_config(void);


#endif
