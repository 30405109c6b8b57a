#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "request-ids.h"

/* The store: what one boxd kept, the next finds (request_ids_clear stands
 * for the crash: memory gone, files kept). */
static void check_store(void)
{
	char dir[] = "/tmp/boxd-request-ids-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char store[128];
	snprintf(store, sizeof store, "%s/store", dir);
	CHECK(request_ids_open(store, 0));
	struct request_id_entry *done = request_ids_begin("done", "POST /v1/exec", 0);
	request_ids_bind(done, "c_1");
	request_ids_finish(done, 201, "application/json", "{\"a\":1}", 7, 5);
	CHECK(done->body == NULL); /* in the store, not in memory */
	struct request_id_entry *running = request_ids_begin("running", "POST /v1/exec", 0);
	request_ids_bind(running, "c_2");
	request_ids_begin("unbound", "PUT /v1/secrets", 0);
	request_ids_clear();

	CHECK(request_ids_open(store, 100));
	CHECK(request_ids_count() == 3);
	done = request_ids_find("done");
	CHECK(done && done->done && done->status == 201 && !done->orphaned);
	size_t length;
	if (done) {
		CHECK(strcmp(done->target, "POST /v1/exec") == 0 &&
		      strcmp(done->resource, "c_1") == 0);
		char *body = request_ids_body(done, &length);
		CHECK(body && length == 7 && strcmp(body, "{\"a\":1}") == 0);
		free(body);
	}
	running = request_ids_find("running");
	CHECK(running && !running->done && running->orphaned &&
	      strcmp(running->resource, "c_2") == 0);
	struct request_id_entry *unbound = request_ids_find("unbound");
	CHECK(unbound && unbound->orphaned && unbound->resource == NULL);
	request_ids_abandon(unbound);
	request_ids_clear();
	CHECK(request_ids_open(store, 100));
	CHECK(request_ids_count() == 2 && request_ids_find("unbound") == NULL);

	/* Past the byte bound the oldest bodies go; the ids stay, refused. */
	size_t big = 4u << 20;
	char *data = calloc(1, big);
	char id[32];
	for (int i = 0; i < 10; i++) {
		snprintf(id, sizeof id, "big-%d", i);
		request_ids_finish(request_ids_begin(id, "PUT /v1/uploads/x", 200), 200, NULL, data,
				   big, 200);
	}
	free(data);
	struct request_id_entry *first = request_ids_find("big-0");
	CHECK(first && first->body_dropped && request_ids_body(first, &length) == NULL);
	CHECK(!request_ids_find("big-9")->body_dropped);
	request_ids_clear();
	CHECK(request_ids_open(store, 300));
	CHECK(request_ids_find("big-0")->body_dropped && !request_ids_find("big-9")->body_dropped);
	request_ids_clear();
	char command[256];
	snprintf(command, sizeof command, "rm -rf %s", dir);
	CHECK(system(command) == 0);
}

int main(void)
{
	CHECK(request_ids_valid("a"));
	CHECK(request_ids_valid("Retry_1-x"));
	CHECK(!request_ids_valid(""));
	CHECK(!request_ids_valid("has space"));
	CHECK(!request_ids_valid("semi;"));
	char long_id[66];
	memset(long_id, 'a', 65);
	long_id[65] = '\0';
	CHECK(!request_ids_valid(long_id));
	long_id[64] = '\0';
	CHECK(request_ids_valid(long_id));

	struct request_id_entry *entry = request_ids_begin("one", "PUT /v1/lock", 0);
	CHECK(request_ids_find("one") == entry && !entry->done);
	request_ids_finish(entry, 200, "application/json", "{}", 2, 10);
	CHECK(entry->done && entry->status == 200 && strcmp(entry->body, "{}") == 0);

	/* 300 more, all answered now: the 256 newest stay, young ones are not dropped. */
	char id[32];
	for (int i = 0; i < 300; i++) {
		snprintf(id, sizeof id, "id-%d", i);
		request_ids_finish(request_ids_begin(id, "PUT /v1/lock", 1000), 200, NULL, "", 0,
				   1000);
	}
	CHECK(request_ids_count() == 301);
	CHECK(request_ids_find("one") != NULL);

	/* 15 minutes later, a new entry makes room: old ones past the newest 256 go. */
	request_ids_begin("late", "PUT /v1/lock", 1000 + REQUEST_IDS_KEEP_MS);
	CHECK(request_ids_count() == REQUEST_IDS_KEEP_COUNT + 1);
	CHECK(request_ids_find("one") == NULL);
	CHECK(request_ids_find("id-299") != NULL);

	/* A pending entry is never dropped, however old. */
	request_ids_clear();
	request_ids_begin("pending", "POST /v1/exec", 0);
	for (int i = 0; i < REQUEST_IDS_HARD_LIMIT + 10; i++) {
		snprintf(id, sizeof id, "n-%d", i);
		request_ids_finish(request_ids_begin(id, "PUT /v1/lock", 0), 200, NULL, "", 0, 0);
	}
	CHECK(request_ids_find("pending") != NULL);
	CHECK(request_ids_count() <= REQUEST_IDS_HARD_LIMIT + 1);
	struct request_id_entry *pending = request_ids_find("pending");
	request_ids_abandon(pending);
	CHECK(request_ids_find("pending") == NULL);
	request_ids_clear();
	CHECK(request_ids_count() == 0);
	check_store();
	return check_done("request-ids");
}
