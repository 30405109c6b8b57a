/* router.c: the router. Turns a request head from a connection (connection.c)
 * into a `struct api_request`, applies the rules every route shares (lock,
 * X-Request-Id), calls the handler and carries its answer back. */
#include "router.h"

#include <errno.h>
#include <event2/buffer.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "router-internal.h"
#include "clock.h"
#include "connection.h"
#include "http-errors.h"
#include "http-parser.h"
#include "log.h"
#include "redact-json.h"
#include "redact.h"
#include "request-ids.h"
#include "routes.h"
#include "text.h"
#include "xalloc.h"

struct query_pair {
	char *name, *value;
	size_t value_length; /* decoded: past a %00 in the value */
};

struct api_request {
	struct http_conn *conn; /* NULL once the client has gone */
	struct http_head head;
	const struct api_route *route;
	char *params[ROUTE_MAX_PARAMS];
	char *path;
	const char *early_error; /* a path that cannot be routed: answered when run */
	char allowed[64];        /* the methods a known path takes, when this one is not */
	struct query_pair *query;
	size_t query_count;
	bool query_parsed;
	struct evbuffer *body;
	cJSON *json;
	char *headers; /* response headers added, "Name: value\r\n"... */
	void *data;
	void (*release)(void *data);
	bool running, gone, streaming;
	void (*on_gone)(struct api_request *req);
	void (*drained)(struct api_request *req);
	void (*body_done)(struct api_request *req, bool complete, int error);
	struct request_id_entry *memory;
	struct request_id_entry *waiting; /* attached to a running X-Request-Id */
	const char *resume;               /* the resource an orphaned X-Request-Id made */
	unsigned uses;                    /* bits of enum router_use begun, ended at the end */
	char *kept; /* what the X-Request-Id memory keeps instead of the answer */
	size_t kept_length;
};

/* What the server was started with (router_setup, router_serve). */
static struct event_base *attached_base;
static struct router_hooks hooks;

struct event_base *api_base(struct api_request *req)
{
	return attached_base;
}

void router_setup(const struct api_route *const *tables, const struct router_hooks *given)
{
	routes_set(tables);
	hooks = *given;
}

void router_serve(struct event_base *base)
{
	attached_base = base;
}

/* Requests that repeated a running X-Request-Id, waiting for its answer. */
struct waiter_list {
	struct api_request **items;
	size_t count;
};

/* ---- request lifetime ---- */

/* One use of the box begins, for this request's life. */
static void use_begins(struct api_request *req, enum router_use use)
{
	if (req->uses & (1u << use) || !hooks.use)
		return;
	req->uses |= 1u << use;
	hooks.use(use, true);
}

static void request_free(struct api_request *req)
{
	for (unsigned use = 0; req->uses >> use; use++)
		if (req->uses & (1u << use))
			hooks.use((enum router_use)use, false);
	if (req->release)
		req->release(req->data);
	for (int i = 0; i < ROUTE_MAX_PARAMS; i++)
		free(req->params[i]);
	for (size_t i = 0; i < req->query_count; i++) {
		free(req->query[i].name);
		free(req->query[i].value);
	}
	free(req->query);
	if (req->body)
		evbuffer_free(req->body);
	if (req->memory && !req->memory->done)
		request_ids_abandon(req->memory);
	cJSON_Delete(req->json);
	free(req->kept);
	free(req->headers);
	free(req->path);
	http_head_free(&req->head);
	free(req);
}

/* Headers of an answer: its type, the echoed request id, the added ones. */
static char *answer_headers(struct api_request *req, const char *content_type,
			    const char *request_id)
{
	char *shown = request_id ? redact_text(request_id) : NULL;
	/* No body, no type (a 204). */
	char *text = xasprintf("%s%s%s%s%s%s%s", content_type ? "Content-Type: " : "",
			       content_type ? content_type : "", content_type ? "\r\n" : "",
			       shown ? "X-Request-Id: " : "", shown ? shown : "",
			       shown ? "\r\n" : "", req->headers ? req->headers : "");
	free(shown);
	return text;
}

/* Sends a whole answer (if the client is still there) and frees the request. */
static void send_raw(struct api_request *req, int status, const char *content_type,
		     const void *data, size_t length, const char *request_id)
{
	if (req->conn) {
		char *headers = answer_headers(req, content_type, request_id);
		http_conn_respond(req->conn, status, headers, data, length);
		free(headers);
		req->conn = NULL;
	}
	request_free(req);
}

static char *error_json(const char *code, const char *message, size_t *length)
{
	char *text = http_error_json(code, message);
	*length = strlen(text);
	return text;
}

static void detach_waiter(struct api_request *req)
{
	struct waiter_list *waiters = req->waiting ? req->waiting->waiters : NULL;
	req->waiting = NULL;
	if (!waiters)
		return;
	for (size_t i = 0; i < waiters->count; i++) {
		if (waiters->items[i] == req) {
			waiters->items[i] = waiters->items[--waiters->count];
			return;
		}
	}
}

static void answer_waiters(struct request_id_entry *entry, const void *data, size_t length)
{
	struct waiter_list *waiters = entry->waiters;
	if (!waiters)
		return;
	entry->waiters = NULL;
	for (size_t i = 0; i < waiters->count; i++) {
		waiters->items[i]->waiting = NULL;
		send_raw(waiters->items[i], entry->status, entry->content_type, data, length,
			 entry->id);
	}
	free(waiters->items);
	free(waiters);
}

static void remember_answer(struct api_request *req, int status, const char *content_type,
			    const void *data, size_t length)
{
	if (!req->memory)
		return;
	if (req->kept) {
		data = req->kept;
		length = req->kept_length;
	}
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

void api_request_lost(struct api_request *req)
{
	req->conn = NULL;
	req->gone = true;
	if (!req->running) {
		request_free(req); /* its handler never saw it */
		return;
	}
	if (req->waiting) {
		detach_waiter(req);
		request_free(req);
		return;
	}
	if (req->body_done) {
		/* The body was streaming: its done() tells, instead of on_gone. */
		void (*done)(struct api_request *, bool, int) = req->body_done;
		req->body_done = NULL;
		done(req, false, ECONNRESET);
		return;
	}
	if (req->on_gone)
		req->on_gone(req);
}

/* ---- answering ---- */

static const char *echoed_id(struct api_request *req)
{
	return req->route && (req->route->flags & API_IDEMPOTENT) ? api_header(req, "X-Request-Id")
								  : NULL;
}

void api_reply_bytes(struct api_request *req, int status, const char *content_type,
		     const void *data, size_t length)
{
	remember_answer(req, status, content_type, data, length);
	send_raw(req, status, content_type, data, length, echoed_id(req));
}

void api_keep_instead(struct api_request *req, cJSON *kept)
{
	redact_json(kept);
	free(req->kept);
	req->kept = cJSON_PrintUnformatted(kept);
	req->kept_length = strlen(req->kept);
	cJSON_Delete(kept);
}

void api_reply_json(struct api_request *req, int status, cJSON *body)
{
	redact_json(body);
	char *text = cJSON_PrintUnformatted(body);
	cJSON_Delete(body);
	api_reply_bytes(req, status, "application/json", text, strlen(text));
	free(text);
}

static void reply_failure_va(struct api_request *req, enum failure failure, const char *fmt,
			     va_list ap) __attribute__((format(printf, 3, 0)));

static void reply_failure_va(struct api_request *req, enum failure failure, const char *fmt,
			     va_list ap)
{
	char message[1024];
	vsnprintf(message, sizeof message, fmt, ap);
	char *masked = redact_text(message);
	size_t length;
	char *text = error_json(failure_code(failure), masked, &length);
	free(masked);
	api_reply_bytes(req, http_status_of(failure), "application/json", text, length);
	free(text);
}

void api_reply_failure(struct api_request *req, enum failure failure, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	reply_failure_va(req, failure, fmt, ap);
	va_end(ap);
}

void api_reply_bad_request(struct api_request *req, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	reply_failure_va(req, FAILURE_BAD_REQUEST, fmt, ap);
	va_end(ap);
}

void api_reply_not_found(struct api_request *req, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	reply_failure_va(req, FAILURE_NOT_FOUND, fmt, ap);
	va_end(ap);
}

bool api_disk_full(int error)
{
	return failure_disk_full(error);
}

void api_reply_write_failed(struct api_request *req, int error, const char *fmt, ...)
{
	char what[768], message[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	enum failure failure = failure_of_write(error, what, message, sizeof message);
	api_reply_failure(req, failure, "%s", message);
}

void api_add_header(struct api_request *req, const char *name, const char *value)
{
	char *shown = redact_text(value);
	for (char *at = shown; *at; at++)
		if (*at == '\r' || *at == '\n')
			*at = ' '; /* a value can never end the header block */
	char *line = xasprintf("%s%s: %s\r\n", req->headers ? req->headers : "", name, shown);
	free(shown);
	free(req->headers);
	req->headers = line;
}

/* ---- streaming ---- */

static void on_drained(void *arg)
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
		char *text = xasprintf("the first call with X-Request-Id %s streams its answer; "
				       "fetch the result %s%s",
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
	use_begins(req, req->route && (req->route->flags & API_LIVE) ? ROUTER_USE_LIVE_VIEW
								     : ROUTER_USE_STREAM);
	if (!req->conn)
		return;
	char *headers = answer_headers(req, content_type, NULL);
	http_conn_stream_start(req->conn, status, headers, on_drained, req);
	free(headers);
}

void api_stream_write(struct api_request *req, const void *data, size_t length)
{
	if (req->conn && req->streaming && length)
		http_conn_stream_write(req->conn, data, length);
}

size_t api_stream_pending(struct api_request *req)
{
	return req->conn ? http_conn_pending(req->conn) : 0;
}

void api_stream_end(struct api_request *req)
{
	if (req->conn) {
		if (!req->streaming)
			api_stream_start(req, 200, "application/octet-stream", NULL);
		http_conn_stream_end(req->conn);
		req->conn = NULL;
	}
	request_free(req);
}

/* ---- upgrading ---- */

struct http_conn *api_upgrade(struct api_request *req, const char *headers,
			      const struct http_raw_ops *ops, void *arg)
{
	struct http_conn *conn = req->conn;
	req->conn = NULL;
	if (conn)
		http_conn_upgrade(conn, headers, ops, arg);
	request_free(req);
	return conn;
}

/* ---- reading ---- */

const char *api_method(struct api_request *req)
{
	return req->head.method;
}

const char *api_param(struct api_request *req, int index)
{
	if (index < 0 || index >= ROUTE_MAX_PARAMS)
		return NULL;
	return req->params[index];
}

/* Query values decode %XX and '+' (a space); a malformed escape stays as it is. */
static char *query_decode(const char *text, size_t length, size_t *decoded_length)
{
	char *out = xmalloc(length + 1), *at = out;
	for (size_t i = 0; i < length; i++) {
		int high, low;
		if (text[i] == '+') {
			*at++ = ' ';
		} else if (text[i] == '%' && i + 2 < length &&
			   (high = text_hex_value(text[i + 1])) >= 0 &&
			   (low = text_hex_value(text[i + 2])) >= 0) {
			*at++ = (char)(high * 16 + low);
			i += 2;
		} else {
			*at++ = text[i];
		}
	}
	*at = '\0';
	if (decoded_length)
		*decoded_length = (size_t)(at - out);
	return out;
}

static void parse_query(struct api_request *req)
{
	req->query_parsed = true;
	const char *query = strchr(req->head.target, '?');
	if (!query)
		return;
	for (const char *at = query + 1; *at;) {
		const char *end = strchr(at, '&');
		if (!end)
			end = at + strlen(at);
		const char *equals = memchr(at, '=', (size_t)(end - at));
		if (end > at) {
			req->query =
				xrealloc(req->query, (req->query_count + 1) * sizeof *req->query);
			struct query_pair *pair = &req->query[req->query_count++];
			const char *name_end = equals ? equals : end;
			pair->name = query_decode(at, (size_t)(name_end - at), NULL);
			pair->value_length = 0;
			pair->value = equals ? query_decode(equals + 1, (size_t)(end - equals - 1),
							    &pair->value_length)
					     : xstrdup("");
		}
		at = *end ? end + 1 : end;
	}
}

const char *api_query(struct api_request *req, const char *name)
{
	if (!req->query_parsed)
		parse_query(req);
	for (size_t i = 0; i < req->query_count; i++)
		if (strcmp(req->query[i].name, name) == 0)
			return req->query[i].value;
	return NULL;
}

bool api_query_has_nul(struct api_request *req, const char *name)
{
	const char *value = api_query(req, name);
	if (!value)
		return false;
	for (size_t i = 0; i < req->query_count; i++)
		if (req->query[i].value == value)
			return strlen(value) != req->query[i].value_length;
	return false;
}

const char *api_header(struct api_request *req, const char *name)
{
	return http_head_get(&req->head, name);
}

const void *api_body(struct api_request *req, size_t *length)
{
	*length = req->body ? evbuffer_get_length(req->body) : 0;
	const void *data = *length ? evbuffer_pullup(req->body, -1) : NULL;
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

void api_body_release(struct api_request *req)
{
	if (req->body)
		evbuffer_free(req->body);
	req->body = NULL;
	cJSON_Delete(req->json);
	req->json = NULL;
}

static void on_body_done(void *arg, bool complete, int error)
{
	struct api_request *req = arg;
	void (*done)(struct api_request *, bool, int) = req->body_done;
	req->body_done = NULL;
	if (done)
		done(req, complete, error);
}

void api_body_to_fd(struct api_request *req, int fd,
		    void (*done)(struct api_request *req, bool complete, int error))
{
	if (!req->conn) {
		close(fd);
		if (done)
			done(req, false, ECONNRESET);
		return;
	}
	req->body_done = done;
	http_conn_body_to_fd(req->conn, fd, on_body_done, req);
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

static void attach_waiter(struct request_id_entry *entry, struct api_request *req)
{
	struct waiter_list *waiters = entry->waiters;
	if (!waiters)
		entry->waiters = waiters = xcalloc(1, sizeof *waiters);
	waiters->items = xrealloc(waiters->items, (waiters->count + 1) * sizeof *waiters->items);
	waiters->items[waiters->count++] = req;
	req->waiting = entry;
}

/* A repeat of a finished call gets its answer again, read back from the
 * store; an answer dropped by the byte bound is refused, never run again. */
static void replay(struct api_request *req, const struct request_id_entry *entry)
{
	size_t length;
	char *body = request_ids_body(entry, &length);
	if (!body) {
		api_reply_failure(
			req, FAILURE_CONFLICT,
			"the first call with X-Request-Id %s ended (status %d) and its answer is "
			"no longer kept; fetch the result %s%s",
			entry->id, entry->status, entry->resource ? "of " : "by its id",
			entry->resource ? entry->resource : "");
		return;
	}
	send_raw(req, entry->status, entry->content_type, body, length, entry->id);
	free(body);
}

/* Applies the X-Request-Id rule. Returns true when the request was answered
 * (replayed, attached or refused) and the handler must not run. */
static bool apply_request_id(struct api_request *req, const char *method)
{
	const char *id = api_header(req, "X-Request-Id");
	if (!id || !(req->route->flags & API_IDEMPOTENT))
		return false;
	if (!request_ids_valid(id)) {
		api_reply_bad_request(
			req, "X-Request-Id must be 1 to 64 characters of A-Z, a-z, 0-9, _ and -");
		return true;
	}
	/* The target is method and whole URI: one id cannot stand for two calls. */
	char *target = xasprintf("%s %s", method, req->head.target);
	struct request_id_entry *entry = request_ids_find(id);
	if (entry && strcmp(entry->target, target) != 0) {
		free(target);
		api_reply_failure(req, FAILURE_CONFLICT,
				  "X-Request-Id %s was already used for another call (%s)", id,
				  entry->target);
		return true;
	}
	if (entry && entry->done) {
		free(target);
		replay(req, entry);
		return true;
	}
	if (entry && entry->orphaned) {
		/* Its boxd ended before it answered. What it made (a command) is
		 * attached to; a call that made nothing yet runs now, once. */
		free(target);
		req->memory = entry;
		if (entry->resource)
			req->resume = entry->resource;
		else
			request_ids_restart(entry);
		entry->orphaned = false;
		return false;
	}
	if (entry) {
		free(target);
		attach_waiter(entry, req);
		return true;
	}
	req->memory = request_ids_begin(id, target, clock_monotonic_ms());
	free(target);
	return false;
}

/* API_FOR_CONTROL routes refuse boxd's own commands, before anything else
 * (a command repeating the control plane's X-Request-Id must not be
 * replayed its answer either). True when the request was answered. */
static bool refuse_command(struct api_request *req, const char *method)
{
	if (!(req->route->flags & API_FOR_CONTROL) || !hooks.is_command || !req->conn)
		return false;
	pid_t pid = http_conn_peer_pid(req->conn);
	if (pid == 0 || (pid > 0 && !hooks.is_command(pid)))
		return false;
	api_reply_failure(
		req, FAILURE_FORBIDDEN,
		"%s %s acts for the control plane or the person at the screen: boxd's own "
		"commands may not call it",
		method, req->route->pattern);
	return true;
}

/* The rules every route shares. True when the request was answered. */
static bool apply_rules(struct api_request *req, const char *method)
{
	if (refuse_command(req, method))
		return true;
	/* Before the X-Request-Id memory: a call refused while frozen is not
	 * run, so its repeat after the thaw must run, not replay the 409. */
	if (!(req->route->flags & API_SERVED_FROZEN) && hooks.frozen && hooks.frozen()) {
		api_reply_failure(req, FAILURE_FROZEN,
				  "the box is frozen for a snapshot; call again once it is thawed "
				  "(POST /v1/thaw or /v1/init)");
		return true;
	}
	if (apply_request_id(req, method))
		return true;
	if ((req->route->flags & API_REFUSED_WHILE_LOCKED) && hooks.locked && hooks.locked()) {
		api_reply_failure(req, FAILURE_LOCKED,
				  "a person has the screen; wait until they hand it back");
		return true;
	}
	return false;
}

struct api_request *api_request_begin(struct http_conn *conn, struct http_head *head)
{
	struct api_request *req = xcalloc(1, sizeof *req);
	req->conn = conn;
	req->head = *head;
	memset(head, 0, sizeof *head);
	const char *target = req->head.target;
	size_t raw_length = strcspn(target, "?#");
	char *raw_path = xstrndup(target, raw_length);
	req->path = route_percent_decode(raw_path, raw_length, NULL);
	if (!req->path) {
		req->path = xstrdup(raw_path);
		req->early_error = "the path holds a malformed %-escape";
	} else {
		bool path_known;
		req->route = routes_find(req->head.method, raw_path, req->params, &path_known,
					 req->allowed, sizeof req->allowed);
		if (!path_known)
			req->allowed[0] = '\0';
	}
	free(raw_path);
	return req;
}

void api_request_fail(struct api_request *req, enum failure failure, const char *message)
{
	api_reply_failure(req, failure, "%s", message);
}

size_t api_request_body_limit(const struct api_request *req)
{
	return req->route && req->route->max_body ? req->route->max_body : API_DEFAULT_MAX_BODY;
}

bool api_request_streams_body(const struct api_request *req)
{
	return req->route && (req->route->flags & API_STREAM_BODY);
}

void api_request_too_large(struct api_request *req, unsigned long long declared)
{
	req->running = true;
	char size[64] = "";
	if (declared)
		snprintf(size, sizeof size, " has %llu bytes;", declared);
	api_reply_failure(req, FAILURE_PAYLOAD_TOO_LARGE,
			  "the body%s %s %s takes at most %zu bytes (large archives go to "
			  "POST /v1/sync/upload or /v1/uploads, which stream)",
			  declared ? size : " is too large:", req->head.method,
			  req->route ? req->route->pattern : req->path,
			  api_request_body_limit(req));
}

void api_request_run(struct api_request *req, struct evbuffer *body)
{
	req->running = true;
	req->body = body;
	const char *method = req->head.method;
	log_msg(LOG_LEVEL_DEBUG, "%s %s", method, req->path);
	if (req->early_error) {
		api_reply_bad_request(req, "%s", req->early_error);
		return;
	}
	if (!req->route) {
		if (req->allowed[0]) {
			api_add_header(req, "Allow", req->allowed);
			api_reply_failure(req, FAILURE_METHOD_NOT_ALLOWED, "%s takes %s, not %s",
					  req->path, req->allowed, method);
		} else {
			api_reply_not_found(req, "no such endpoint: %s %s", method, req->path);
		}
		return;
	}
	if (!(req->route->flags & API_NOT_ACTIVITY))
		use_begins(req, ROUTER_USE_CALL);
	if (req->route->flags & API_UPLOAD)
		use_begins(req, ROUTER_USE_UPLOAD);
	if (apply_rules(req, method))
		return;
	req->route->handle(req);
}
