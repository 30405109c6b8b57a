/* api-files-changes.c: GET /v1/files/changes (API.md, "Sync and files",
 * "Changes"; docs/changes.md).
 *
 *   ?since=C      -> {"cursor": C2, "changes": [{"path","kind","type","from"}]}
 *                    or {"all": true, "cursor": C2}
 *   (no since)    -> {"cursor": C}
 *   &follow=1     -> NDJSON: the changes since C (if given), then each batch as
 *                    it happens, each batch ended by {"cursor": ...}; an alive
 *                    event after 20 s of silence.
 * Paths in answers are absolute. A name that is not UTF-8 goes as `path`
 * with U+FFFD for its bad bytes and `pathHex` with its bytes (`fromHex`). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "router.h"
#include "api.h"
#include "api-alive.h"
#include "changes.h"
#include "redact-json.h"
#include "utf8.h"
#include "work-path.h"
#include "xalloc.h"

/* What waits for the client before a follow stops sending; what it missed
 * meanwhile goes, coalesced, once it drains. */
#define FOLLOW_HIGH (1u << 20)

struct follow_call {
	struct api_request *req;
	struct changes_scope scope;
	char *under;
	char *cursor; /* what the client has been sent up to */
	struct changes_follower follower;
	struct api_alive *alive;
};

/* ---- entries as JSON ---- */

static cJSON *list_json(const struct change_list *list)
{
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "cursor", list->cursor);
	if (list->all) {
		cJSON_AddTrueToObject(body, "all");
		return body;
	}
	cJSON *changes = cJSON_AddArrayToObject(body, "changes");
	for (size_t i = 0; i < list->count; i++)
		cJSON_AddItemToArray(changes,
				     change_to_json(&list->items[i], api_config()->work_dir));
	return body;
}

/* ---- the follow ---- */

static void send_line(struct follow_call *call, cJSON *line)
{
	redact_json(line);
	char *text = cJSON_PrintUnformatted(line);
	cJSON_Delete(line);
	size_t length = strlen(text);
	text[length] = '\n'; /* over the NUL: one write with its newline */
	api_stream_write(call->req, text, length + 1);
	free(text);
}

static void send_alive(void *arg, cJSON *event)
{
	send_line(arg, event);
}

static void send_cursor(struct follow_call *call, const char *cursor, bool all)
{
	cJSON *line = cJSON_CreateObject();
	if (all)
		cJSON_AddTrueToObject(line, "all");
	cJSON_AddStringToObject(line, "cursor", cursor);
	send_line(call, line);
	free(call->cursor);
	call->cursor = xstrdup(cursor);
	api_alive_rearm(call->alive);
}

/* Sends what changed since the last cursor sent, unless the client is
 * behind (the drain calls again). */
static void send_news(struct follow_call *call)
{
	if (api_stream_pending(call->req) >= FOLLOW_HIGH)
		return;
	struct change_list list;
	enum failure failure;
	char why[160];
	if (!changes_since(call->cursor, &call->scope, &list, &failure, why, sizeof why))
		return;
	if (list.all || list.count) {
		for (size_t i = 0; i < list.count; i++)
			send_line(call, change_to_json(&list.items[i], api_config()->work_dir));
		send_cursor(call, list.cursor, list.all);
	} else {
		free(call->cursor); /* nothing in scope: move on quietly */
		call->cursor = xstrdup(list.cursor);
	}
	change_list_free(&list);
}

static void on_changed(void *arg)
{
	send_news(arg);
}

static void on_drained(struct api_request *req)
{
	struct follow_call *call = api_data(req);
	if (call)
		send_news(call);
}

static void on_client_gone(struct api_request *req)
{
	api_stream_end(req);
}

static void call_release(void *data)
{
	struct follow_call *call = data;
	changes_unfollow(&call->follower);
	api_alive_free(call->alive);
	free(call->under);
	free(call->cursor);
	free(call);
}

static void start_follow(struct api_request *req, const char *under, bool internals,
			 const char *since)
{
	struct follow_call *call = xcalloc(1, sizeof *call);
	call->req = req;
	call->under = xstrdup(under);
	call->scope = (struct changes_scope){.under = call->under, .internals = internals};
	call->follower = (struct changes_follower){.changed = on_changed, .arg = call};
	api_set_data(req, call, call_release);
	api_stream_start(req, 200, "application/x-ndjson", on_drained);
	api_on_client_gone(req, on_client_gone);
	call->alive = api_alive_new(api_base(req), send_alive, call);
	changes_follow(&call->follower);
	if (since) {
		call->cursor = xstrdup(since); /* checked already */
		send_news(call);
		return;
	}
	char *cursor = changes_cursor();
	send_cursor(call, cursor, false);
	free(cursor);
}

/* ---- the route ---- */

static bool parse_flag(struct api_request *req, const char *name, bool *value)
{
	const char *text = api_query(req, name);
	*value = text && (strcmp(text, "1") == 0 || strcmp(text, "true") == 0);
	if (!text || *value || strcmp(text, "0") == 0 || strcmp(text, "false") == 0)
		return true;
	api_reply_bad_request(req, "%s must be 1 or 0, not %.32s", name, text);
	return false;
}

/* The folder asked about, relative to the work dir; NULL after answering. */
static char *parse_path(struct api_request *req)
{
	const char *path = api_query(req, "path");
	const char *work_dir = api_config()->work_dir;
	if (!path || !*path)
		return xstrdup("");
	if (!utf8_valid(path, strlen(path))) {
		api_reply_bad_request(req, "path must be UTF-8 (percent-encoded in the query)");
		return NULL;
	}
	if (strlen(path) >= PATH_MAX) {
		api_reply_bad_request(req, "path is longer than %d bytes", PATH_MAX - 1);
		return NULL;
	}
	for (const char *at = path; *at;) {
		size_t component = strcspn(at, "/");
		if (component > NAME_MAX) {
			api_reply_bad_request(req, "path has a name longer than %d bytes",
					      NAME_MAX);
			return NULL;
		}
		at += component + (at[component] == '/');
	}
	const char *why = NULL;
	char *relative = work_path_relative(work_dir, path, &why);
	if (!relative)
		api_reply_bad_request(req, "path %s (it must be under %s, or relative to it)",
				      why ? why : "is not allowed", work_dir);
	return relative;
}

static void handle_changes(struct api_request *req)
{
	bool follow, internals;
	if (!parse_flag(req, "follow", &follow) || !parse_flag(req, "all", &internals))
		return;
	char *under = parse_path(req);
	if (!under)
		return;
	const char *since = api_query(req, "since");
	struct changes_scope scope = {.under = under, .internals = internals};
	struct change_list list;
	enum failure failure;
	char why[160];
	if (since && !changes_since(since, &scope, &list, &failure, why, sizeof why)) {
		api_reply_failure(req, failure, "%s", why);
	} else if (follow) {
		if (since)
			change_list_free(&list); /* the follow asks again from the cursor */
		start_follow(req, under, internals, since);
	} else if (since) {
		api_reply_json(req, 200, list_json(&list));
		change_list_free(&list);
	} else {
		cJSON *body = cJSON_CreateObject();
		char *cursor = changes_cursor();
		cJSON_AddStringToObject(body, "cursor", cursor);
		free(cursor);
		api_reply_json(req, 200, body);
	}
	free(under);
}

const struct api_route api_files_changes_routes[] = {
	/* Read-only: served while a person has the screen, as files are. */
	{"GET", "/v1/files/changes", 0, 0, handle_changes},
	{0},
};
