#include <string.h>

#include "check.h"
#include "http/request-ids.h"

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
		request_ids_finish(request_ids_begin(id, "PUT /v1/lock", 1000), 200, NULL, "", 0, 1000);
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
	return check_done("request-ids");
}
