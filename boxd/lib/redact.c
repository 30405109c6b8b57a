#include "redact.h"

#include <stdatomic.h>

#include "xalloc.h"

static _Atomic(redact_filter_fn) current_filter;

void redact_set_filter(redact_filter_fn filter)
{
	atomic_store(&current_filter, filter);
}

bool redact_active(void)
{
	return atomic_load(&current_filter) != NULL;
}

char *redact_text(const char *text)
{
	redact_filter_fn filter = atomic_load(&current_filter);
	return filter ? filter(text) : xstrdup(text);
}
