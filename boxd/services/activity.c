/* activity.c: the reasons the box is in use (activity.h). Counters for what
 * begins and ends on the loop, sources for the rest; each reason remembers
 * when it was last in use, which gives idleSince and keepAwakeUntil. */
#include "activity.h"

#include <stdio.h>

#include "clock.h"

struct reason_state {
	unsigned under_way;
	int64_t last_ms; /* when it last ended (or a source said it was last in use) */
	activity_source_fn source;
};

static const char *const names[ACTIVITY_REASON_COUNT] = {
	[ACTIVITY_CALL] = "call",           [ACTIVITY_STREAM] = "stream",
	[ACTIVITY_UPLOAD] = "upload",       [ACTIVITY_LIVE_VIEW] = "liveView",
	[ACTIVITY_RECORDING] = "recording", [ACTIVITY_TERMINAL] = "terminal",
	[ACTIVITY_INGRESS] = "ingress",     [ACTIVITY_BACKGROUND] = "background",
	[ACTIVITY_LOCK] = "lock",
};

static struct reason_state reasons[ACTIVITY_REASON_COUNT];
static int64_t started_ms;

void activity_init(void)
{
	started_ms = clock_now_ms();
	/* A box whose boxd just started is in use: the start counts as a call. */
	reasons[ACTIVITY_CALL].last_ms = started_ms;
}

void activity_begin(enum activity_reason reason)
{
	reasons[reason].under_way++;
	if (reason == ACTIVITY_CALL)
		reasons[reason].last_ms = clock_now_ms();
}

void activity_end(enum activity_reason reason)
{
	if (reasons[reason].under_way)
		reasons[reason].under_way--;
	reasons[reason].last_ms = clock_now_ms();
}

void activity_register_source(enum activity_reason reason, activity_source_fn active)
{
	reasons[reason].source = active;
}

/* Whether `reason` is in use now; a source's last use is remembered, so a
 * command that was forgotten since does not move idleSince back. */
static bool in_use(enum activity_reason reason, int64_t now)
{
	struct reason_state *state = &reasons[reason];
	bool active = state->under_way > 0;
	if (state->source) {
		int64_t last = 0;
		active = state->source(now, &last) || active;
		if (last > state->last_ms)
			state->last_ms = last;
	}
	return active;
}

/* Milliseconds as digits: cJSON would print a large double in exponent form. */
static void add_ms(cJSON *object, const char *name, int64_t value)
{
	char digits[32];
	snprintf(digits, sizeof digits, "%lld", (long long)value);
	cJSON_AddRawToObject(object, name, digits);
}

static int64_t later(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

void activity_describe(cJSON *activity, bool background_running)
{
	int64_t now = clock_now_ms();
	bool active[ACTIVITY_REASON_COUNT];
	bool busy = false;
	for (int i = 0; i < ACTIVITY_REASON_COUNT; i++)
		busy |= active[i] = in_use(i, now);
	int64_t last_call = reasons[ACTIVITY_CALL].last_ms;
	/* The contract's rule for calls (an hour while a background command
	 * runs), then every other use keeps the box awake as a call does, while
	 * under way and for as long after. The background reason itself adds
	 * nothing: its hour is the calls' rule. */
	int64_t until =
		last_call + (background_running ? ACTIVITY_BACKGROUND_MS : ACTIVITY_KEEP_AWAKE_MS);
	int64_t idle_since = started_ms;
	cJSON *list = cJSON_CreateArray();
	for (int i = 0; i < ACTIVITY_REASON_COUNT; i++) {
		idle_since = later(idle_since, reasons[i].last_ms);
		if (active[i])
			cJSON_AddItemToArray(list, cJSON_CreateString(names[i]));
		if (i == ACTIVITY_BACKGROUND)
			continue;
		int64_t used = active[i] ? now : reasons[i].last_ms;
		if (used)
			until = later(until, used + ACTIVITY_KEEP_AWAKE_MS);
	}
	add_ms(activity, "lastCallAt", last_call);
	add_ms(activity, "keepAwakeUntil", until);
	cJSON_AddNumberToObject(activity, "callsInFlight", reasons[ACTIVITY_CALL].under_way);
	cJSON_AddBoolToObject(activity, "busy", busy);
	cJSON_AddItemToObject(activity, "reasons", list);
	if (busy)
		cJSON_AddNullToObject(activity, "idleSince");
	else
		add_ms(activity, "idleSince", idle_since);
}
