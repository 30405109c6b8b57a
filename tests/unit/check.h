/* check.h: the smallest test harness: CHECK records a failure with its
 * place and goes on; check_done() prints the count and gives the exit code. */
#ifndef BOXD_CHECK_H
#define BOXD_CHECK_H

#include <stdio.h>

static int check_failures, check_count;

#define CHECK(condition)                                                                 \
	do {                                                                             \
		check_count++;                                                           \
		if (!(condition)) {                                                      \
			check_failures++;                                                \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
				#condition);                                             \
		}                                                                        \
	} while (0)

/* CHECK with a printf-style note of what was seen instead. */
#define CHECKF(condition, ...)                                                           \
	do {                                                                             \
		check_count++;                                                           \
		if (!(condition)) {                                                      \
			check_failures++;                                                \
			fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, \
				#condition);                                             \
			fprintf(stderr, __VA_ARGS__);                                    \
			fputc('\n', stderr);                                             \
		}                                                                        \
	} while (0)

static inline int check_done(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
	return check_failures ? 1 : 0;
}

#endif
