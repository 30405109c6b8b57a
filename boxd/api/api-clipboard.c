/* api-clipboard.c: GET and PUT /v1/screen/clipboard?selection=clipboard|primary.
 *
 * The selections live in the screen worker (screen-client.h); here are the
 * HTTP shapes: which selection, what the body is (a PNG by its type or its
 * signature, else UTF-8 text), the masking of text read, the steps.
 * docs/screen.md, "Clipboard", has the decisions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api.h"
#include "router.h"
#include "screen-client.h"
#include "secrets.h"
#include "steps.h"
#include "utf8.h"

/* The route's body limit: a larger PUT is a 413. */
#define CLIPBOARD_MAX_BODY (10u << 20)
/* The PNG file signature. */
static const unsigned char png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

/* The selection the query names (default: clipboard); NULL after a 400. */
static const char *clipboard_selection(struct api_request *req)
{
	const char *selection = api_query(req, "selection");
	if (!selection)
		return "clipboard";
	if (!api_query_has_nul(req, "selection") &&
	    (strcmp(selection, "clipboard") == 0 || strcmp(selection, "primary") == 0))
		return selection;
	api_reply_bad_request(req, "selection must be clipboard or primary, not \"%.40s\"",
			      selection);
	return NULL;
}

/* ---- GET ---- */

/* The owner's target names, as a header may carry them. */
static void clipboard_add_targets(struct api_request *req, const char *targets)
{
	char clean[1024];
	size_t n = 0;
	for (const char *c = targets; c && *c && n + 1 < sizeof clean; c++)
		if (*c > ' ' && *c < 0x7f)
			clean[n++] = *c;
	clean[n] = '\0';
	api_add_header(req, "X-Clipboard-Targets", clean);
}

/* Text as the answer's charset promises (bad bytes become U+FFFD) and
 * masked: a secret's value comes back as ****. */
static void clipboard_reply_text(struct api_request *req, const struct screen_clipboard *content)
{
	const char *text = content->data;
	char *clean = NULL;
	size_t length = content->length;
	if (!utf8_valid(text, length)) {
		clean = utf8_sanitize(text, length, &length);
		text = clean;
	}
	size_t masked_length;
	char *masked = secrets_mask_bytes(text, length, &masked_length);
	free(clean);
	api_reply_bytes(req, 200, "text/plain; charset=utf-8", masked, masked_length);
	free(masked);
}

static void clipboard_on_get(void *arg, const struct screen_clipboard *content,
			     const struct screen_failure *failed)
{
	struct api_request *req = arg;
	if (failed) {
		api_reply_failure(req, failed->failure, "%s", failed->message);
		return;
	}
	const char *selection = clipboard_selection(req);
	switch (content->kind) {
	case SCREEN_CLIPBOARD_TEXT:
		steps_add("clipboard", "read the %s selection: text, %zu bytes", selection,
			  content->length);
		api_add_header(req, "X-Clipboard", "text");
		clipboard_reply_text(req, content);
		break;
	case SCREEN_CLIPBOARD_IMAGE:
		/* An image is not masked: the masker finds text, not pictures. */
		steps_add("clipboard", "read the %s selection: PNG, %zu KiB", selection,
			  (content->length + 1023) / 1024);
		api_add_header(req, "X-Clipboard", "image");
		api_reply_bytes(req, 200, "image/png", content->data, content->length);
		break;
	case SCREEN_CLIPBOARD_EMPTY:
		api_add_header(req, "X-Clipboard", "empty");
		api_reply_bytes(req, 204, NULL, NULL, 0);
		break;
	case SCREEN_CLIPBOARD_OTHER:
		api_add_header(req, "X-Clipboard", "other");
		clipboard_add_targets(req, content->targets);
		api_reply_bytes(req, 204, NULL, NULL, 0);
		break;
	}
}

static void handle_clipboard_get(struct api_request *req)
{
	const char *selection = clipboard_selection(req);
	if (selection)
		screen_clipboard_get(selection, clipboard_on_get, req);
}

/* ---- PUT ---- */

/* The media type of the body, lower case, without parameters. */
static void clipboard_media_type(struct api_request *req, char *type, size_t size)
{
	const char *header = api_header(req, "Content-Type");
	size_t n = 0;
	for (const char *c = header; c && *c && *c != ';' && n + 1 < size; c++)
		if (*c != ' ' && *c != '\t')
			type[n++] = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
	type[n] = '\0';
}

/* True for a PNG (by type or signature); false for text. A body that is
 * neither gets its 400 here (returns false with *refused). */
static bool clipboard_is_png(struct api_request *req, const void *body, size_t length,
			     bool *refused)
{
	char type[128];
	clipboard_media_type(req, type, sizeof type);
	bool signed_png = length >= sizeof png_signature &&
			  memcmp(body, png_signature, sizeof png_signature) == 0;
	*refused = false;
	if (strcmp(type, "image/png") == 0 && !signed_png) {
		api_reply_bad_request(req, "the body is said to be image/png but does not start "
					   "with the PNG signature");
		*refused = true;
		return false;
	}
	if (strncmp(type, "image/", 6) == 0 && strcmp(type, "image/png") != 0) {
		api_reply_bad_request(req, "only text and PNG images go on the clipboard, not %s",
				      type);
		*refused = true;
		return false;
	}
	return signed_png;
}

static void clipboard_on_set(void *arg, const struct screen_failure *failed)
{
	struct api_request *req = arg;
	if (failed) {
		api_reply_failure(req, failed->failure, "%s", failed->message);
		return;
	}
	size_t length;
	api_body(req, &length);
	cJSON *reply = cJSON_CreateObject();
	cJSON_AddBoolToObject(reply, "ok", true);
	cJSON_AddStringToObject(reply, "selection", clipboard_selection(req));
	cJSON_AddStringToObject(reply, "kind", (const char *)api_data(req));
	cJSON_AddNumberToObject(reply, "bytes", (double)length);
	api_reply_json(req, 200, reply);
}

static void handle_clipboard_put(struct api_request *req)
{
	const char *selection = clipboard_selection(req);
	if (!selection)
		return;
	size_t length;
	const void *body = api_body(req, &length);
	bool refused;
	bool png = clipboard_is_png(req, body, length, &refused);
	if (refused)
		return;
	if (!png && !utf8_valid(body, length)) {
		api_reply_bad_request(req, "the text is not valid UTF-8; a PNG goes as image/png");
		return;
	}
	/* The kind, for the answer (a string of this file's, not freed). */
	api_set_data(req, (void *)(png ? "image" : "text"), NULL);
	if (png)
		steps_add("clipboard", "set the %s selection: PNG, %zu KiB", selection,
			  (length + 1023) / 1024);
	else
		steps_add("clipboard", "set the %s selection: text, %zu bytes", selection, length);
	screen_clipboard_set(selection, png, body, length, clipboard_on_set, req);
}

const struct api_route api_clipboard_routes[] = {
	{"GET", "/v1/screen/clipboard", 0, 0, handle_clipboard_get},
	/* Not refused while locked: the person in a takeover pastes through it. */
	{"PUT", "/v1/screen/clipboard", API_IDEMPOTENT, CLIPBOARD_MAX_BODY, handle_clipboard_put},
	{0},
};
