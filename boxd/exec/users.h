/* users.h: who a command runs as, from the user database (getpwnam,
 * getgrouplist), kept between commands: an agent runs every command as
 * the same user, and a lookup reads and parses /etc/passwd and /etc/group
 * each time (tens of microseconds of every exec). */
#ifndef BOXD_USERS_H
#define BOXD_USERS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct user_entry {
	char *name;
	uid_t uid;
	gid_t gid;
	char *home;
	gid_t *groups; /* supplementary groups, the primary one among them */
	size_t group_count;
};

/* The entry for `given`, a user name or a uid in decimal; NULL for a name
 * with no entry. A uid with none gets one made up: that uid, the same gid,
 * HOME=/, no groups, its name the number. The entry belongs to the cache
 * and stays valid until the next call. A kept entry is used while
 * /etc/passwd and /etc/group are the same files, unchanged (inode, size,
 * times), and for at most USERS_KEEP_MS (entries from other sources, which
 * the files' times say nothing about). Nothing is kept for a name not
 * found: it may be added any moment. */
const struct user_entry *users_find(const char *given);

#define USERS_KEEP_MS 10000

#endif
