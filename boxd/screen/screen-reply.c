/* screen-reply.c: the worker's side of the frames (screen-protocol.h):
 * answers and errors to boxd, and the fields of a request. */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "failure.h"
#include "screen-protocol.h"
#include "screen-worker.h"

/* Live threads (live.c) send fragments while the main thread answers. */
static pthread_mutex_t worker_send_lock = PTHREAD_MUTEX_INITIALIZER;

void worker_send(struct worker *worker, cJSON *json, const void *payload, size_t length)
{
	char *text = cJSON_PrintUnformatted(json);
	cJSON_Delete(json);
	struct screen_frame_header header = {(uint32_t)strlen(text), (uint32_t)length};
	struct iovec parts[3] = {
		{&header, sizeof header}, {text, header.json_length}, {(void *)payload, length}};
	int count = length ? 3 : 2, first = 0;
	pthread_mutex_lock(&worker_send_lock);
	while (first < count) {
		ssize_t n = writev(worker->fd, parts + first, count - first);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			/* boxd is gone; the read side notices and ends the worker. */
			break;
		}
		while (first < count && (size_t)n >= parts[first].iov_len)
			n -= (ssize_t)parts[first++].iov_len;
		if (first < count) {
			parts[first].iov_base = (uint8_t *)parts[first].iov_base + n;
			parts[first].iov_len -= (size_t)n;
		}
	}
	pthread_mutex_unlock(&worker_send_lock);
	free(text);
}

cJSON *worker_answer(double id)
{
	cJSON *json = cJSON_CreateObject();
	cJSON_AddNumberToObject(json, "id", id);
	cJSON_AddBoolToObject(json, "ok", true);
	return json;
}

void worker_error(struct worker *worker, double id, enum failure failure, const char *fmt, ...)
{
	char message[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	cJSON *json = cJSON_CreateObject();
	cJSON_AddNumberToObject(json, "id", id);
	cJSON *error = cJSON_AddObjectToObject(json, "error");
	cJSON_AddStringToObject(error, "code", failure_code(failure));
	cJSON_AddStringToObject(error, "message", message);
	worker_send(worker, json, NULL, 0);
}

/* A number given as a JSON number or as text (query strings arrive as text). */
bool worker_number(const cJSON *request, const char *name, double fallback, double *value)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(request, name);
	if (!item || cJSON_IsNull(item)) {
		*value = fallback;
		return true;
	}
	if (cJSON_IsNumber(item)) {
		*value = item->valuedouble;
		return true;
	}
	if (!cJSON_IsString(item) || !item->valuestring[0] ||
	    isspace((unsigned char)item->valuestring[0]))
		return false;
	char *end;
	errno = 0;
	*value = strtod(item->valuestring, &end);
	return !*end && errno == 0 && *value == *value; /* rejects NaN too */
}

bool worker_integer(const cJSON *request, const char *name, long fallback, long minimum,
		    long maximum, long *value)
{
	/* As text, an integer is plain decimal digits: no "1e3", "0x10" or " 5". */
	const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(request, name));
	if (text && text[strspn(text, "-0123456789")] != '\0')
		return false;
	double number;
	/* Range first: converting an out-of-range double to an integer is undefined. */
	if (!worker_number(request, name, (double)fallback, &number) || number < minimum ||
	    number > maximum || number != (double)(long)number)
		return false;
	*value = (long)number;
	return true;
}
