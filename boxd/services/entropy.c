/* entropy.c: an init's host-drawn bytes into the kernel's pool (entropy.h). */
#include "entropy.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "base64.h"
#include "capabilities.h"
#include "io.h"
#include "log.h"
#include "text.h"

/* struct rand_pool_info with its bytes: the kernel reads buf_size bytes
 * after the two counts. */
struct pool_info {
	int entropy_count; /* bits credited */
	int buf_size;
	unsigned char buf[ENTROPY_MAX_BYTES];
};

static bool decode(const char *text, struct pool_info *info, char *error, size_t size)
{
	size_t length = 0;
	if (!base64_decode(text, strlen(text), info->buf, sizeof info->buf, &length) ||
	    length < ENTROPY_MIN_BYTES) {
		explicit_bzero(info->buf, sizeof info->buf);
		return text_fail(
			error, size,
			"entropy must be base64 (RFC 4648) of %d to %d bytes the host drew",
			ENTROPY_MIN_BYTES, ENTROPY_MAX_BYTES);
	}
	info->buf_size = (int)length;
	info->entropy_count = (int)length * 8;
	return true;
}

bool entropy_check(const char *text, char *error, size_t size)
{
	struct pool_info info;
	bool ok = decode(text, &info, error, size);
	explicit_bzero(&info, sizeof info);
	return ok;
}

/* The credited way: RNDADDENTROPY then RNDRESEEDCRNG, CAP_SYS_ADMIN raised
 * for the two calls only. -1 with errno when the kernel refused. */
static int credit_and_reseed(int fd, const struct pool_info *info)
{
	if (!capabilities_raise(CAP_SYS_ADMIN, true)) {
		errno = EPERM;
		return -1;
	}
	int status = ioctl(fd, RNDADDENTROPY, info);
	if (status == 0)
		status = ioctl(fd, RNDRESEEDCRNG);
	int saved = errno;
	capabilities_raise(CAP_SYS_ADMIN, false);
	errno = saved;
	return status;
}

const char *entropy_give(const char *text, char *error, size_t size)
{
	struct pool_info info;
	if (!decode(text, &info, error, size))
		return NULL;
	const char *outcome = NULL;
	int fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		text_fail(error, size, "cannot open /dev/urandom: %s", strerror(errno));
	} else if (credit_and_reseed(fd, &info) == 0) {
		outcome = "reseeded";
	} else if (errno != EPERM) {
		text_fail(error, size, "the kernel refused the entropy: %s", strerror(errno));
	} else if (io_write_all(fd, info.buf, (size_t)info.buf_size)) {
		log_msg(LOG_LEVEL_WARNING, "init: no CAP_SYS_ADMIN: the entropy was mixed into the "
					   "pool, not credited, "
					   "and the random generator takes it at its next reseed");
		outcome = "mixed";
	} else {
		text_fail(error, size, "cannot write to /dev/urandom: %s", strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	explicit_bzero(&info, sizeof info);
	return outcome;
}
