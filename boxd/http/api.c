/* api.c: the router. Turns an evhttp request into a `struct api_request`,
 * applies the rules every route shares (body limit, lock, X-Request-Id),
 * calls the handler and carries its answer back. */
#include "api.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api-internal.h"
#include "clock.h"
#include "health.h"
#include "http-errors.h"
#include "lock.h"
#include "log.h"
#include "redact-json.h"
#include "redact.h"
#include "request-ids.h"
#include "routes.h"
#include "text.h"
#include "xalloc.h"

struct api_request {
	struct evhttp_request *http;
	struct evhttp_connection *connection;
	const struct api_route *route;
	char *params[ROUTE_MAX_PARAMS];
	char *path;
	struct evkeyvalq query;
	bool query_parsed;
	cJSON *json;
	void *data;
	void (*release)(void *data);
	bool gone;
	bool streaming;
	void (*on_gone)(struct api_request *req);
	void (*drained)(struct api_request *req);
	struct request_id_entry *memory;
	const char *resume; /* the resource an orphaned X-Request-Id made */
	bool activity;      /* counted in health's calls in flight */
};

/* What the server was started with (api_attach). */
static struct event_base *attached_base;
static const struct boxd_config *attached_config;

const struct boxd_config *api_config(struct api_request *req)
{
	return attached_config;
}

struct event_base *api_base(struct api_request *req)
{
	return attached_base;
}

/* Requests that repeated a running X-Request-Id, waiting for its answer. */
struct waiter_list {
	struct evhttp_request **items;
	size_t count;
};

static const char *method_name(enum evhttp_cmd_type type)
{
	switch (type) {
	case EVHTTP_REQ_GET: return "GET";
	case EVHTTP_REQ_POST: return "POST";
	case EVHTTP_REQ_HEAD: return "HEAD";
	case EVHTTP_REQ_PUT: return "PUT";
	case EVHTTP_REQ_DELETE: return "DELETE";
	case EVHTTP_REQ_OPTIONS: return "OPTIONS";
	case EVHTTP_REQ_TRACE: return "TRACE";
	case EVHTTP_REQ_CONNECT: return "CONNECT";
	case EVHTTP_REQ_PATCH: return "PATCH";
	}
	return "UNKNOWN";
}

/* ---- answering raw evhttp requests (also used for waiters) ---- */

static void send_raw(struct evhttp_request *http, int status, const char *content_type,
		     const void *data, size_t length, const char *request_id)
{
	struct evkeyvalq *headers = evhttp_request_get_output_headers(http);
	evhttp_add_header(headers, "Content-Type", content_type);
	if (request_id) {
		/* Echoed, so masked like everything boxd returns. */
		char *shown = redact_text(request_id);
		evhttp_add_header(headers, "X-Request-Id", shown);
		free(shown);
	}
	struct evbuffer *body = evbuffer_new();
	evbuffer_add(body, data, length);
	/* With the client gone, evhttp frees the request instead of sending. */
	evhttp_send_reply(http, status, NULL, body);
	evbuffer_free(body);
}

static char *error_json(const char *code, const char *message, size_t *length)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *error = cJSON_AddObjectToObject(root, "error");
	cJSON_AddStringToObject(error, "code", code);
	cJSON_AddStringToObject(error, "message", message);
	char *text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	*length = strlen(text);
	return text;
}

static void send_raw_error(struct evhttp_request *http, int status, const char *code,
			   const char *message)
{
	size_t length;
	char *text = error_json(code, message, &length);
	send_raw(http, status, "application/json", text, length, NULL);
	free(text);
}

/* ---- request lifetime ---- */

static void on_connection_closed(struct evhttp_connection *connection, void *arg)
{
	struct api_request *req = arg;
	req->gone = true;
	req->connection = NULL;
	if (req->on_gone)
		req->on_gone(req);
}

static void request_free(struct api_request *req)
{
	if (req->activity)
		health_call_ended();
	if (req->connection)
		evhttp_connection_set_closecb(req->connection, NULL, NULL);
	if (req->release)
		req->release(req->data);
	for (int i = 0; i < ROUTE_MAX_PARAMS; i++)
		free(req->params[i]);
	if (req->query_parsed)
		evhttp_clear_headers(&req->query);
	cJSON_Delete(req->json);
	free(req->path);
	free(req);
}

static void answer_waiters(struct request_id_entry *entry, const void *data, size_t length)
{
	struct waiter_list *waiters = entry->waiters;
	if (!waiters)
		return;
	for (size_t i = 0; i < waiters->count; i++)
		send_raw(waiters->items[i], entry->status, entry->content_type, data, length, entry->id);
	free(waiters->items);
	free(waiters);
	entry->waiters = NULL;
}

static void remember_answer(struct api_request *req, int status, const char *content_type,
			    const void *data, size_t length)
{
	if (!req->memory)
		return;
	request_ids_finish(req->memory, status, content_type, data, length, clock_monotonic_ms());
	answer_waiters(req->memory, data, length);
	req->memory = NULL;
}

void api_request_bind(struct api_request *req, const char *resource)
{
	if (req->memory)
		request_ids_bind(req->memory, resource);
}

const char *api_request_resumed(struct api_request *req)
{
	return req->resume;
}

/* ---- answering ---- */

void api_reply_bytes(struct api_request *req, int status, const char *content_type,
		     const void *data, size_t length)
{
	remember_answer(req, status, content_type, data, length);
	const char *id = evhttp_find_header(evhttp_request_get_input_headers(req->http), "X-Request-Id");
	send_raw(req->http, status, content_type, data, length,
		 req->route && (req->route->flags & API_IDEMPOTENT) ? id : NULL);
	request_free(req);
}

void api_reply_json(struct api_request *req, int status, cJSON *body)
{
	redact_json(body);
	char *text = cJSON_PrintUnformatted(body);
	cJSON_Delete(body);
	api_reply_bytes(req, status, "application/json", text, strlen(text));
	free(text);
}

static void reply_error_va(struct api_request *req, int status, const char *code,
			   const char *fmt, va_list ap)
{
	char message[1024];
	vsnprintf(message, sizeof message, fmt, ap);
	char *masked = redact_text(message);
	size_t length;
	char *text = error_json(code, masked, &length);
	free(masked);
	api_reply_bytes(req, status, "application/json", text, length);
	free(text);
}

void api_reply_error(struct api_request *req, int status, const char *code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	reply_error_va(req, status, code, fmt, ap);
	va_end(ap);
}

void api_reply_bad_request(struct api_request *req, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	reply_error_va(req, 400, "bad_request", fmt, ap);
	va_end(ap);
}

void api_reply_not_found(struct api_request *req, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	reply_error_va(req, 404, "not_found", fmt, ap);
	va_end(ap);
}

void api_add_header(struct api_request *req, const char *name, const char *value)
{
	char *shown = redact_text(value);
	evhttp_add_header(evhttp_request_get_output_headers(req->http), name, shown);
	free(shown);
}

/* ---- streaming ---- */

static void on_chunk_written(struct evhttp_connection *connection, void *arg)
{
	struct api_request *req = arg;
	if (req->drained && !req->gone)
		req->drained(req);
}

void api_stream_start(struct api_request *req, int status, const char *content_type,
		      void (*drained)(struct api_request *req))
{
	if (req->memory) {
		/* A stream cannot be replayed: this and every later repeat is
		 * told to fetch the result by its id. */
		struct request_id_entry *entry = req->memory;
		char *text = xasprintf("the first call with X-Request-Id %s streams its answer; fetch the result %s%s",
				       entry->id, entry->resource ? "of " : "by its id",
				       entry->resource ? entry->resource : "");
		char *message = redact_text(text);
		free(text);
		size_t length;
		char *body = error_json("conflict", message, &length);
		remember_answer(req, 409, "application/json", body, length);
		free(body);
		free(message);
	}
	req->streaming = true;
	req->drained = drained;
	if (req->gone)
		return;
	evhttp_add_header(evhttp_request_get_output_headers(req->http), "Content-Type", content_type);
	evhttp_send_reply_start(req->http, status, NULL);
}

void api_stream_write(struct api_request *req, const void *data, size_t length)
{
	if (req->gone || length == 0)
		return;
	struct evbuffer *chunk = evbuffer_new();
	evbuffer_add(chunk, data, length);
	evhttp_send_reply_chunk_with_cb(req->http, chunk, on_chunk_written, req);
	evbuffer_free(chunk);
}

size_t api_stream_pending(struct api_request *req)
{
	if (req->gone || !req->connection)
		return 0;
	struct bufferevent *bev = evhttp_connection_get_bufferevent(req->connection);
	return bev ? evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}

void api_stream_end(struct api_request *req)
{
	/* evhttp frees a request whose client is gone here too. */
	evhttp_send_reply_end(req->http);
	request_free(req);
}

/* ---- reading ---- */

const char *api_method(struct api_request *req)
{
	return method_name(evhttp_request_get_command(req->http));
}

const char *api_path(struct api_request *req)
{
	return req->path;
}

const char *api_param(struct api_request *req, int index)
{
	if (index < 0 || index >= ROUTE_MAX_PARAMS)
		return NULL;
	return req->params[index];
}

const char *api_query(struct api_request *req, const char *name)
{
	if (!req->query_parsed) {
		req->query.tqh_first = NULL;
		req->query.tqh_last = &req->query.tqh_first;
		const char *query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req->http));
		if (query)
			evhttp_parse_query_str(query, &req->query);
		req->query_parsed = true;
	}
	return evhttp_find_header(&req->query, name);
}

const char *api_header(struct api_request *req, const char *name)
{
	return evhttp_find_header(evhttp_request_get_input_headers(req->http), name);
}

const void *api_body(struct api_request *req, size_t *length)
{
	struct evbuffer *buffer = evhttp_request_get_input_buffer(req->http);
	*length = evbuffer_get_length(buffer);
	const void *data = evbuffer_pullup(buffer, -1);
	return data ? data : "";
}

cJSON *api_body_json(struct api_request *req)
{
	if (req->json)
		return req->json;
	size_t length;
	const char *body = api_body(req, &length);
	if (length == 0) {
		req->json = cJSON_CreateObject();
		return req->json;
	}
	const char *end = NULL;
	cJSON *json = cJSON_ParseWithLengthOpts(body, length, &end, false);
	if (!json) {
		size_t at = end && end >= body ? (size_t)(end - body) : 0;
		api_reply_bad_request(req, "the body is not valid JSON (error near byte %zu)", at);
		return NULL;
	}
	if (!cJSON_IsObject(json)) {
		cJSON_Delete(json);
		api_reply_bad_request(req, "the body must be a JSON object");
		return NULL;
	}
	if (text_json_has_nul(body, length)) {
		cJSON_Delete(json);
		api_reply_bad_request(req, "a string in the body holds a NUL character (\\u0000), "
				      "which no command, path or value can carry");
		return NULL;
	}
	req->json = json;
	return json;
}

void api_set_data(struct api_request *req, void *data, void (*release)(void *data))
{
	req->data = data;
	req->release = release;
}

void *api_data(struct api_request *req)
{
	return req->data;
}

bool api_client_gone(struct api_request *req)
{
	return req->gone;
}

void api_on_client_gone(struct api_request *req, void (*gone)(struct api_request *req))
{
	req->on_gone = gone;
}

/* ---- dispatch ---- */

static void attach_waiter(struct request_id_entry *entry, struct evhttp_request *http)
{
	struct waiter_list *waiters = entry->waiters;
	if (!waiters)
		entry->waiters = waiters = xcalloc(1, sizeof *waiters);
	waiters->items = xrealloc(waiters->items, (waiters->count + 1) * sizeof *waiters->items);
	waiters->items[waiters->count++] = http;
}

/* A repeat of a finished call gets its answer again, read back from the
 * store; an answer dropped by the byte bound is refused, never run again. */
static void replay(struct api_request *req, const struct request_id_entry *entry)
{
	size_t length;
	char *body = request_ids_body(entry, &length);
	if (!body) {
		api_reply_error(req, 409, "conflict",
				"the first call with X-Request-Id %s ended (status %d) and its answer is "
				"no longer kept; fetch the result %s%s",
				entry->id, entry->status, entry->resource ? "of " : "by its id",
				entry->resource ? entry->resource : "");
		return;
	}
	send_raw(req->http, entry->status, entry->content_type, body, length, entry->id);
	free(body);
	request_free(req);
}

/* Applies the X-Request-Id rule. Returns true when the request was answered
 * (replayed, attached or refused) and the handler must not run. */
static bool apply_request_id(struct api_request *req, const char *method)
{
	const char *id = api_header(req, "X-Request-Id");
	if (!id || !(req->route->flags & API_IDEMPOTENT))
		return false;
	if (!request_ids_valid(id)) {
		api_reply_bad_request(req, "X-Request-Id must be 1 to 64 characters of A-Z, a-z, 0-9, _ and -");
		return true;
	}
	/* The target is method and whole URI: one id cannot stand for two calls. */
	char *target = xasprintf("%s %s", method, evhttp_request_get_uri(req->http));
	struct request_id_entry *entry = request_ids_find(id);
	if (entry && strcmp(entry->target, target) != 0) {
		free(target);
		api_reply_error(req, 409, "conflict", "X-Request-Id %s was already used for another call (%s)",
				id, entry->target);
		return true;
	}
	free(target);
	if (entry && entry->done) {
		replay(req, entry);
		return true;
	}
	if (entry && entry->orphaned) {
		/* Its boxd ended before it answered. What it made (a command) is
		 * attached to; a call that made nothing yet runs now, once. */
		req->memory = entry;
		if (entry->resource)
			req->resume = entry->resource;
		else
			request_ids_restart(entry);
		entry->orphaned = false;
		return false;
	}
	if (entry) {
		attach_waiter(entry, req->http);
		request_free(req);
		return true;
	}
	target = xasprintf("%s %s", method, evhttp_request_get_uri(req->http));
	req->memory = request_ids_begin(id, target, clock_monotonic_ms());
	free(target);
	return false;
}

/* The rules every route shares. True when the request was answered. */
static bool apply_rules(struct api_request *req, const char *method)
{
	const struct api_route *route = req->route;
	size_t limit = route->max_body ? route->max_body : API_DEFAULT_MAX_BODY;
	size_t length = evbuffer_get_length(evhttp_request_get_input_buffer(req->http));
	if (length > limit) {
		api_reply_error(req, 413, "payload_too_large",
				"the body has %zu bytes; %s %s takes at most %zu", length, method,
				route->pattern, limit);
		return true;
	}
	if (apply_request_id(req, method))
		return true;
	if ((route->flags & API_REFUSED_WHILE_LOCKED) && lock_is_locked()) {
		api_reply_error(req, 423, "locked", "a person has the screen; wait until they hand it back");
		return true;
	}
	return false;
}

static void dispatch(struct evhttp_request *http, void *arg)
{
	http_errors_router_answers(http);
	const char *method = method_name(evhttp_request_get_command(http));
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(http);
	const char *raw_path = uri ? evhttp_uri_get_path(uri) : NULL;
	if (!raw_path || raw_path[0] != '/') {
		send_raw_error(http, 400, "bad_request", "the request target must be a path such as /v1/health");
		return;
	}
	struct api_request *req = xcalloc(1, sizeof *req);
	req->http = http;
	req->connection = evhttp_request_get_connection(http);
	req->path = route_percent_decode(raw_path, strlen(raw_path), NULL);
	if (!req->path) {
		req->path = xstrdup(raw_path);
		api_reply_bad_request(req, "the path holds a malformed %%-escape");
		return;
	}
	bool path_known;
	char allowed[64];
	req->route = routes_find(method, raw_path, req->params, &path_known, allowed, sizeof allowed);
	log_msg(LOG_LEVEL_DEBUG, "%s %s", method, raw_path);
	if (!req->route) {
		if (path_known) {
			api_add_header(req, "Allow", allowed);
			api_reply_error(req, 405, "method_not_allowed", "%s takes %s, not %s", req->path,
					allowed, method);
		} else {
			api_reply_not_found(req, "no such endpoint: %s %s", method, req->path);
		}
		return;
	}
	if (!(req->route->flags & API_NOT_ACTIVITY)) {
		health_call_started();
		req->activity = true;
	}
	if (apply_rules(req, method))
		return;
	if (req->connection)
		evhttp_connection_set_closecb(req->connection, on_connection_closed, req);
	req->route->handle(req);
}

void api_attach(struct evhttp *http, struct event_base *base, const struct boxd_config *config)
{
	attached_base = base;
	attached_config = config;
	evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
				   EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
				   EVHTTP_REQ_PATCH);
	evhttp_set_max_body_size(http, API_MAX_BODY);
	/* Past the limit evhttp answers 413 at once and closes. Its lingering
	 * close (read the rest, then answer) is not used: in libevent 2.1.12 it
	 * keeps what it reads, so a 10 GB body would cost 10 GB. Its answer
	 * goes out as the contract's JSON (http-errors.c). */
	http_errors_attach(http);
	evhttp_set_gencb(http, dispatch, NULL);
}
