/* services-internal.h: what the services' files share (services.c runs the
 * table's changes; services-table.c parses, checks and keeps it;
 * services-wire.c makes the box follow it; services-ready.c watches the
 * listeners). Nothing outside boxd/services/services*.c includes this. */
#ifndef BOXD_SERVICES_INTERNAL_H
#define BOXD_SERVICES_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <cjson/cJSON.h>

#include "sockets.h"

struct event_base;

/* The names' addresses: one each, from this /16, whose first address is
 * the resolver's (dnsmasq, on the box's loopback: see docs/services.md).
 * 198.18.0.0/15 is reserved for benchmarking (RFC 2544): no real network a
 * box talks to uses it. */
#define SERVICES_NET 0xc6120000u /* 198.18.0.0 */
#define SERVICES_NET_BITS 16
#define SERVICES_RESOLVER (SERVICES_NET | 1u)
#define SERVICES_FIRST_HOST 2u
#define SERVICES_MAX 1024
#define SERVICES_NAME_MAX 253

enum service_mode { SERVICE_BOX, SERVICE_EXTERNAL };

struct service {
	char *name;
	unsigned port, target_port;
	enum service_mode mode;
	char *address;                  /* external: as given ("10.20.0.5:8443", "vsock:2:15432") */
	struct sockaddr_storage target; /* external: parsed */
	socklen_t target_length;
	uint32_t ip; /* host order, in SERVICES_NET */
	/* Box entries: how targetPort listens now (services-ready.c). */
	enum listen_reach reach;
	/* External entries: whether `address` accepted at the last try. */
	bool accepting;
};

struct services_table {
	struct service *entries;
	size_t count;
};

/* ---- services-table.c ---- */
/* Parses one entry (`at` names it in errors: "services[2]"); false with a
 * sentence naming the field. */
bool services_parse_entry(const cJSON *json, const char *at, struct service *out, char *error,
			  size_t error_size);
/* Parses {"services": [...]}: each entry, no name twice, no box port twice. */
bool services_parse_table(const cJSON *body, struct services_table *out, char *error,
			  size_t error_size);
/* Checks a table made by a change (duplicates, size); false with a sentence. */
bool services_check_table(const struct services_table *table, char *error, size_t error_size);
/* Gives every entry of `table` an address: the one `previous` had for the
 * name, else the lowest free one (previous NULL: entries that have one keep
 * it). */
void services_assign_ips(struct services_table *table, const struct services_table *previous);
struct service *services_find(const struct services_table *table, const char *name);
void services_copy_entry(struct service *to, const struct service *from);
void services_copy_table(struct services_table *to, const struct services_table *from);
void services_free_entry(struct service *entry);
void services_free_table(struct services_table *table);
/* The entry as the API shows it, with ip, listening and listener. */
cJSON *services_entry_json(const struct service *entry);
bool services_listening(const struct service *entry);
/* What survives a restart: the table with its addresses. */
bool services_save(const char *path, const struct services_table *table);
void services_load(const char *path, struct services_table *table);
void services_ip_text(uint32_t ip, char *text, size_t size);

/* ---- services-wire.c ---- */
/* Whether the box is wired for services (the resolver's address is local
 * and boxd may run nft), with why not in `why`. Decided at start. */
bool services_wire_probe(char *why, size_t why_size);
/* Makes the box follow `table`: the hosts block, the resolver's file, the
 * relay's routes and the way in at once; the kernel's rules through nft,
 * whose end calls done(ok, error) on the loop (at once when not wired). */
typedef void (*services_wired_fn)(bool ok, const char *error, void *arg);
void services_wire(const struct services_table *table, services_wired_fn done, void *arg);
void services_wire_init(struct event_base *base, const char *run_dir, const char *hosts_path,
			bool wired, uint16_t relay_port, unsigned ingress_base, bool relay_running);

/* ---- services-ready.c ---- */
/* The loop that watches listeners while any entry needs it. */
void services_ready_init(struct event_base *base);
void services_ready_stop(void);
/* The table changed: start or stop watching, and look at once. */
void services_ready_update(void);

/* ---- services.c ---- */
/* The table in force (the last one applied). */
struct services_table *services_current(void);
/* services-ready.c saw a change of how a box entry listens that changes the
 * kernel's rules (a listener moved to or from ::1 only): wire again. */
void services_rewire(void);

#endif
