/* mask-forms.h: the encoded forms of a secret value (internal to mask.c).
 * See mask.h for the list of forms; every buffer here is wiped when freed. */
#ifndef BOXD_MASK_FORMS_H
#define BOXD_MASK_FORMS_H

#include <stdbool.h>
#include <stddef.h>

struct mask_form_item {
	char *data;
	size_t len;
	/* An encoding a tool wraps into lines (base64, hex): the form also
	 * matches with line ends between its characters (see mask.h). */
	bool wraps;
};

struct mask_forms {
	struct mask_form_item *items;
	size_t count;
	size_t cap;
};

void mask_forms_init(struct mask_forms *forms);
/* Adds every form of the value (duplicates and short forms included), or
 * only the raw bytes when `encodings` is false. */
void mask_forms_add_value(struct mask_forms *forms, const char *value, size_t len, bool encodings);
/* Drops duplicates (a form kept both ways keeps `wraps`) and forms shorter
 * than `min_length` (mask.c's MASK_MIN_FORM). */
void mask_forms_finish(struct mask_forms *forms, size_t min_length);
void mask_forms_free(struct mask_forms *forms);

#endif
