/* The manifest parser and the path-safety rule. */
#include <stdio.h>
#include <string.h>

#include "manifest.h"
#include "safe-path.h"

#include "check.h"

static const char *parse(const char *line, char *path, size_t *length)
{
	unsigned char sha1[MANIFEST_SHA1_SIZE];
	return manifest_parse_line(line, strlen(line), sha1, path, length);
}

int main(void)
{
	char path[256];
	size_t length;
	const char *sha = "da39a3ee5e6b4b0d3255bfef95601890afd80709";
	char line[512];

	snprintf(line, sizeof line, "%s 612f62", sha); /* "a/b" */
	CHECK(parse(line, path, &length) == NULL && length == 3 && strcmp(path, "a/b") == 0);
	snprintf(line, sizeof line, "%s 612F62\r", sha);
	CHECK(parse(line, path, &length) == NULL && strcmp(path, "a/b") == 0);
	snprintf(line, sizeof line, "%s ff2e78", sha); /* not UTF-8 */
	CHECK(parse(line, path, &length) == NULL && length == 3 && (unsigned char)path[0] == 0xff);
	snprintf(line, sizeof line, "%s 2f6574632f706173737764", sha); /* /etc/passwd */
	CHECK(parse(line, path, &length) != NULL);
	snprintf(line, sizeof line, "%s 2e2e2f78", sha); /* ../x */
	CHECK(parse(line, path, &length) != NULL);
	snprintf(line, sizeof line, "%s 612f2e2e", sha); /* a/.. */
	CHECK(parse(line, path, &length) != NULL);
	snprintf(line, sizeof line, "%s 610062", sha); /* NUL inside */
	CHECK(parse(line, path, &length) != NULL);
	snprintf(line, sizeof line, "%s 612", sha); /* odd hex */
	CHECK(parse(line, path, &length) != NULL);
	snprintf(line, sizeof line, "%s 6g", sha);
	CHECK(parse(line, path, &length) != NULL);
	snprintf(line, sizeof line, "%s", sha);
	CHECK(parse(line, path, &length) != NULL);
	CHECK(parse("zz39a3ee5e6b4b0d3255bfef95601890afd80709 61", path, &length) != NULL);
	snprintf(line, sizeof line, "%s  61", sha);
	CHECK(parse(line, path, &length) != NULL);

	CHECK(safe_path_check("a", 1) == NULL);
	CHECK(safe_path_check("a/..b/c..", 9) == NULL);
	CHECK(safe_path_check("", 0) != NULL);
	CHECK(safe_path_check("/a", 2) != NULL);
	CHECK(safe_path_check("a//b", 4) != NULL);
	CHECK(safe_path_check("a/", 2) != NULL);
	CHECK(safe_path_check("./a", 3) != NULL);
	CHECK(safe_path_check("..", 2) != NULL);
	CHECK(safe_path_check("a/../../b", 9) != NULL);

	char name[64];
	strcpy(name, "./a/b/");
	CHECK(safe_path_trim(name, strlen(name)) == 3 && strcmp(name, "a/b") == 0);
	strcpy(name, ".");
	CHECK(safe_path_trim(name, 1) == 0);
	strcpy(name, "./");
	CHECK(safe_path_trim(name, 2) == 0);
	strcpy(name, "/etc");
	CHECK(safe_path_trim(name, 4) == 4); /* stays absolute: refused by the check */

	char hex[7];
	manifest_hex_encode("\xff\x00z", 3, hex);
	CHECK(strcmp(hex, "ff007a") == 0);
	return check_done("manifest");
}
