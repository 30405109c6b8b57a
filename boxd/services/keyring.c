/* keyring.c: raw add_key/keyctl syscalls (no libkeyutils needed). */
#include "keyring.h"

#include <errno.h>
#include <linux/keyctl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* From keyutils.h: possessor and same-uid user may do everything. */
#define KEY_POS_ALL 0x3f000000u
#define KEY_USR_ALL 0x003f0000u

static long key_find(const char *description)
{
	return syscall(SYS_keyctl, KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, "user", description, 0);
}

static void chunk_name(char *out, size_t size, const char *name, int index)
{
	snprintf(out, size, "%s:%d", name, index);
}

/* Removes chunks from `first` on. */
static void clear_from(const char *name, int first)
{
	char description[4200];
	for (int i = first;; i++) {
		chunk_name(description, sizeof description, name, i);
		long id = key_find(description);
		if (id < 0)
			return;
		/* Invalidate rather than unlink: the payload is freed at once. */
		if (syscall(SYS_keyctl, KEYCTL_INVALIDATE, id) != 0)
			syscall(SYS_keyctl, KEYCTL_UNLINK, id, KEY_SPEC_USER_KEYRING);
	}
}

/* A key is born in the session keyring and moved to the user keyring: a
 * new key grants its owner uid nothing but a view unless possessed, and only
 * a possessor may widen that. Under systemd (KeyringMode=private) the session
 * keyring is the invocation's own, the user keyring is not linked from it,
 * so a key added straight to the user keyring is never possessed: the next
 * boxd, a new invocation, could neither find nor read it. */
static bool add_chunk(const char *description, const char *data, size_t n)
{
	long id = syscall(SYS_add_key, "user", description, data, n, KEY_SPEC_SESSION_KEYRING);
	if (id < 0)
		return false;
	bool kept = syscall(SYS_keyctl, KEYCTL_SETPERM, id, KEY_POS_ALL | KEY_USR_ALL) == 0 &&
		    syscall(SYS_keyctl, KEYCTL_LINK, id, KEY_SPEC_USER_KEYRING) == 0;
	int saved = errno;
	/* Kept by the user keyring alone: commands inherit boxd's session keyring. */
	syscall(SYS_keyctl, KEYCTL_UNLINK, id, KEY_SPEC_SESSION_KEYRING);
	if (!kept)
		syscall(SYS_keyctl, KEYCTL_INVALIDATE, id);
	errno = saved;
	return kept;
}

bool keyring_save(const char *name, const char *data, size_t len, char *error, size_t error_size)
{
	char description[4200];
	int chunks = 0;
	for (size_t at = 0; at < len; at += KEYRING_CHUNK, chunks++) {
		size_t n = len - at < KEYRING_CHUNK ? len - at : KEYRING_CHUNK;
		chunk_name(description, sizeof description, name, chunks);
		if (!add_chunk(description, data + at, n)) {
			snprintf(error, error_size,
				 "the kernel keyring refused to keep %s (%s): it will "
				 "not survive a restart of boxd",
				 name, strerror(errno));
			return false;
		}
	}
	clear_from(name, chunks);
	return true;
}

long keyring_load(const char *name, char *buf, size_t size)
{
	char description[4200];
	size_t len = 0;
	for (int i = 0;; i++) {
		chunk_name(description, sizeof description, name, i);
		long id = key_find(description);
		if (id < 0)
			return (long)len;
		long n = syscall(SYS_keyctl, KEYCTL_READ, id, buf + len, size - len);
		if (n < 0)
			return (long)len;
		if ((size_t)n > size - len)
			return -1;
		len += (size_t)n;
	}
}

void keyring_clear(const char *name)
{
	clear_from(name, 0);
}
