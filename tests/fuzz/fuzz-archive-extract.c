/* fuzz-archive-extract: tar and tar.gz uploads through archive_extract, the
 * archive worker's extractor, into a scratch destination. Aborts when
 * anything appears outside it: beside it ("../outside" of the seeds) or in
 * /tmp/boxd-fuzz-decoy (the absolute target of the seeds' links). */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive-tgz.h"

#define DECOY "/tmp/boxd-fuzz-decoy"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char base[64], dest[80], outside[80];

static void setup(void)
{
	snprintf(base, sizeof base, "/tmp/boxd-fuzz-archive.XXXXXX");
	if (!mkdtemp(base))
		abort();
	snprintf(dest, sizeof dest, "%s/dest", base);
	snprintf(outside, sizeof outside, "%s/outside", base);
	if (mkdir(dest, 0755) != 0 || mkdir(outside, 0755) != 0)
		abort();
	mkdir(DECOY, 0755);
}

/* Entries of `path` besides "." and ".."; -1 when it cannot be read. */
static int entry_count(const char *path)
{
	DIR *dir = opendir(path);
	if (!dir)
		return -1;
	int count = 0;
	for (struct dirent *entry; (entry = readdir(dir));)
		count += strcmp(entry->d_name, ".") && strcmp(entry->d_name, "..");
	closedir(dir);
	return count;
}

static int open_up(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type == FTW_D || type == FTW_DNR)
		chmod(path, (st->st_mode & 07777) | 0700);
	return 0;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	if (ftw->level > 0)
		remove(path);
	return 0;
}

static void clear_dest(void)
{
	nftw(dest, open_up, 16, FTW_PHYS);
	nftw(dest, remove_one, 16, FTW_PHYS | FTW_DEPTH);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!base[0])
		setup();
	int input = memfd_create("fuzz-archive", 0);
	if (input < 0 || write(input, data, size) != (ssize_t)size ||
	    lseek(input, 0, SEEK_SET) != 0)
		abort();
	int dest_fd = open(dest, O_RDONLY | O_DIRECTORY);
	if (dest_fd < 0)
		abort();
	struct archive_extract_options options = {.dest_fd = dest_fd, .input_fd = input};
	struct archive_extract_result result;
	archive_extract(&options, &result);
	close(dest_fd);
	close(input);
	if (entry_count(base) != 2 || entry_count(outside) != 0 || entry_count(DECOY) > 0) {
		fprintf(stderr, "archive_extract wrote outside its destination (%s)\n", base);
		abort();
	}
	clear_dest();
	return 0;
}
