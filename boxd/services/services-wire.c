/* services-wire.c: making the box follow the services table.
 *
 * - Names: boxd's services block of /etc/hosts (programs on the box), and
 *   RUN_DIR/dns/services, which dnsmasq reads through --hostsdir (inotify,
 *   no signal) and answers on 198.18.0.1 for Docker's containers: Docker's
 *   `dns` setting points the default bridge's resolv.conf and the compose
 *   networks' embedded resolver there. See docs/services.md.
 * - Ports: a table of boxd's own in nftables (`ip boxd`), replaced whole
 *   in one transaction (`nft -f`): each name:port is DNATed where it leads.
 *   The kernel then forwards, so a restart of boxd cuts no connection and a
 *   switch leaves the open ones on their conntrack entries.
 * - What the kernel cannot forward (to a listener on ::1 only, to an IPv6
 *   address, to vsock) it DNATs to the relay (relay.h), as the way in is. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include "hosts-block.h"
#include "io.h"
#include "log.h"
#include "relay.h"
#include "services-internal.h"
#include "text.h"
#include "xalloc.h"

#define HOSTS_BEGIN "# boxd services: begin (the services table's names; rewritten by boxd)"
#define HOSTS_END "# boxd services: end"
#define NFT_TIMEOUT_MS 10000

static struct event_base *loop;
static char *hosts_path, *dns_dir, *dns_path, *dns_staging_path, *rules_path, *rules_log_path;
static bool wired, relay_on;
static uint16_t relay_port;
static unsigned ingress_base;

static const char *nft_path(void)
{
	static const char *const candidates[] = {"/usr/sbin/nft", "/sbin/nft"};
	for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++)
		if (access(candidates[i], X_OK) == 0)
			return candidates[i];
	return NULL;
}

static bool resolver_address_is_local(void)
{
	struct ifaddrs *addresses;
	if (getifaddrs(&addresses) != 0)
		return false;
	bool found = false;
	for (struct ifaddrs *a = addresses; a && !found; a = a->ifa_next)
		found = a->ifa_addr && a->ifa_addr->sa_family == AF_INET &&
			ntohl(((struct sockaddr_in *)a->ifa_addr)->sin_addr.s_addr) ==
				SERVICES_RESOLVER;
	freeifaddrs(addresses);
	return found;
}

bool services_wire_probe(char *why, size_t size)
{
	char resolver[INET_ADDRSTRLEN];
	services_ip_text(SERVICES_RESOLVER, resolver, sizeof resolver);
	if (!resolver_address_is_local())
		return text_fail(
			why, size,
			"%s is on no interface of the box (boxd-dns.service puts it on lo): "
			"names are written, nothing forwards",
			resolver);
	if (geteuid() != 0)
		return text_fail(why, size,
				 "boxd does not run as root: it cannot set nftables rules");
	if (!nft_path())
		return text_fail(why, size, "nft (Debian's nftables) is not installed");
	return true;
}

/* ---- names ---- */

static char *names_text(const struct services_table *table)
{
	char *text = NULL;
	size_t length = 0;
	FILE *out = open_memstream(&text, &length);
	for (size_t i = 0; i < table->count; i++) {
		char ip[INET_ADDRSTRLEN];
		services_ip_text(table->entries[i].ip, ip, sizeof ip);
		fprintf(out, "%s\t%s\n", ip, table->entries[i].name);
	}
	fclose(out);
	return text;
}

static bool write_names(const struct services_table *table, char *error, size_t size)
{
	char *text = names_text(table);
	bool ok = hosts_block_write(hosts_path, HOSTS_BEGIN, HOSTS_END, text, error, size);
	/* dnsmasq reads every file of its --hostsdir, a PATH.tmp too, and would
	 * keep the names of one it saw half-way: the file is made beside the
	 * dir and moved in whole. There even with no service (empty). */
	if (ok && (!io_replace_file(dns_staging_path, text, strlen(text), 0644, 0) ||
		   rename(dns_staging_path, dns_path) != 0)) {
		text_fail(error, size, "cannot write %s: %s", dns_path, strerror(errno));
		ok = false;
	}
	free(text);
	return ok;
}

/* ---- where each name:port leads ---- */

/* Whether the kernel cannot forward this entry itself. */
static bool through_relay(const struct service *entry)
{
	if (entry->mode == SERVICE_BOX)
		return entry->reach == LISTEN_V6_LOOPBACK;
	return entry->target.ss_family != AF_INET;
}

static void write_destination(FILE *out, const struct service *entry)
{
	if (through_relay(entry)) {
		fprintf(out, "127.0.0.1:%u", relay_port);
	} else if (entry->mode == SERVICE_BOX) {
		fprintf(out, "127.0.0.1:%u", entry->target_port);
	} else {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&entry->target;
		char ip[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
		fprintf(out, "%s:%u", ip, ntohs(in->sin_port));
	}
}

/* The whole table, replaced in one transaction: `table` first so that the
 * delete never fails on a box where it is not there yet.
 * - prerouting (containers) and output (the box's programs) DNAT the
 *   names' addresses, before Docker's own rules (-110: dstnat is -100;
 *   numbers, because nft 1.0.6 takes no "dstnat" on the output hook);
 * - postrouting masquerades what was DNATed out of an interface (an
 *   external address): its answer must come back through the box;
 * - DNAT to 127.0.0.1 from a container needs route_localnet (set with the
 *   resolver's address, boxd-dns.service); input then drops what reaches
 *   127.0.0.0/8 from outside without having been DNATed, as the kernel did
 *   before (CVE-2020-8558). */
static char *ruleset_text(const struct services_table *table)
{
	char net[INET_ADDRSTRLEN];
	services_ip_text(SERVICES_NET, net, sizeof net);
	char *text = NULL;
	size_t length = 0;
	FILE *out = open_memstream(&text, &length);
	fprintf(out,
		"table ip boxd\ndelete table ip boxd\ntable ip boxd {\n"
		"\tchain prerouting {\n\t\ttype nat hook prerouting priority -110; policy accept;\n"
		"\t\tip daddr %s/%d jump services\n\t}\n"
		"\tchain output {\n\t\ttype nat hook output priority -110; policy accept;\n"
		"\t\tip daddr %s/%d jump services\n\t}\n"
		"\tchain postrouting {\n\t\ttype nat hook postrouting priority 90; policy accept;\n"
		"\t\tct status dnat ct original ip daddr %s/%d oifname != \"lo\" masquerade\n\t}\n"
		"\tchain input {\n\t\ttype filter hook input priority -10; policy accept;\n"
		"\t\tiifname != \"lo\" ip daddr 127.0.0.0/8 ct status & dnat == 0 drop\n\t}\n"
		"\tchain services {\n",
		net, SERVICES_NET_BITS, net, SERVICES_NET_BITS, net, SERVICES_NET_BITS);
	for (size_t i = 0; i < table->count; i++) {
		const struct service *entry = &table->entries[i];
		char ip[INET_ADDRSTRLEN];
		services_ip_text(entry->ip, ip, sizeof ip);
		fprintf(out, "\t\tip daddr %s tcp dport %u dnat to ", ip, entry->port);
		write_destination(out, entry);
		fprintf(out, "\n");
	}
	fprintf(out, "\t}\n}\n");
	fclose(out);
	return text;
}

/* ---- the relay: its routes and the way in ---- */

static void set_relay(const struct services_table *table)
{
	struct relay_route *routes = xcalloc(table->count + 1, sizeof *routes);
	struct relay_ingress *ingress = xcalloc(table->count + 1, sizeof *ingress);
	size_t route_count = 0, ingress_count = 0;
	for (size_t i = 0; i < table->count; i++) {
		const struct service *entry = &table->entries[i];
		if (through_relay(entry)) {
			struct relay_route *route = &routes[route_count++];
			route->ip = htonl(entry->ip);
			route->port = (uint16_t)entry->port;
			if (entry->mode == SERVICE_BOX) {
				struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&route->target;
				in6->sin6_family = AF_INET6;
				in6->sin6_addr = in6addr_loopback;
				in6->sin6_port = htons((uint16_t)entry->target_port);
				route->target_length = sizeof *in6;
			} else {
				route->target = entry->target;
				route->target_length = entry->target_length;
			}
		}
		if (ingress_base && entry->mode == SERVICE_BOX)
			ingress[ingress_count++] =
				(struct relay_ingress){.vsock_port = ingress_base + entry->port,
						       .target_port = entry->target_port};
	}
	relay_set(routes, route_count, ingress, ingress_count);
	free(routes);
	free(ingress);
}

/* ---- nft, on the loop ---- */

struct nft_run {
	services_wired_fn done;
	void *arg;
};

static char *read_log(void)
{
	int fd = open(rules_log_path, O_RDONLY | O_CLOEXEC);
	size_t length = 0;
	char *text = fd >= 0 ? io_read_to_end(fd, 4096, &length) : NULL;
	if (fd >= 0)
		close(fd);
	if (!text)
		return xstrdup("no message");
	/* One line for the error message. */
	for (char *c = text; *c; c++)
		if (*c == '\n' || *c == '\t')
			*c = ' ';
	return text;
}

static void on_nft_exit(int status, void *arg)
{
	struct nft_run *run = arg;
	if (status == 0) {
		run->done(true, NULL, run->arg);
	} else {
		char *message = read_log();
		char error[600];
		snprintf(error, sizeof error, "nft refused the services' rules (%s): %.500s",
			 status < 0 ? "no answer in 10 s" : "exit status", message);
		log_msg(LOG_LEVEL_ERROR, "%s", error);
		free(message);
		run->done(false, error, run->arg);
	}
	free(run);
}

static bool spawn_nft(pid_t *pid, char *error, size_t size)
{
	const char *argv[] = {nft_path(), "-f", rules_path, NULL};
	if (!argv[0]) /* removed since boxd started */
		return text_fail(error, size, "nft (Debian's nftables) is not installed");
	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&actions, 1, rules_log_path, O_WRONLY | O_CREAT | O_TRUNC,
					 0600);
	posix_spawn_file_actions_adddup2(&actions, 1, 2);
	posix_spawnattr_t attributes;
	helper_spawn_attributes(&attributes);
	extern char **environ;
	int status = posix_spawn(pid, argv[0], &actions, &attributes, (char **)argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	posix_spawnattr_destroy(&attributes);
	if (status != 0)
		return text_fail(error, size, "cannot run %s: %s", argv[0], strerror(status));
	return true;
}

static void set_rules(const struct services_table *table, services_wired_fn done, void *arg)
{
	char error[512];
	char *text = ruleset_text(table);
	bool written = io_replace_file(rules_path, text, strlen(text), 0600, 0);
	free(text);
	pid_t pid = -1;
	if (!written) {
		snprintf(error, sizeof error, "cannot write %s: %s", rules_path, strerror(errno));
		done(false, error, arg);
		return;
	}
	if (!spawn_nft(&pid, error, sizeof error)) {
		done(false, error, arg);
		return;
	}
	struct nft_run *run = xmalloc(sizeof *run);
	*run = (struct nft_run){.done = done, .arg = arg};
	helper_watch_exit(loop, pid, NFT_TIMEOUT_MS, on_nft_exit, run);
}

void services_wire(const struct services_table *table, services_wired_fn done, void *arg)
{
	char error[512];
	if (!write_names(table, error, sizeof error)) {
		done(false, error, arg);
		return;
	}
	if (relay_on)
		set_relay(table);
	if (wired)
		set_rules(table, done, arg);
	else
		done(true, NULL, arg);
}

void services_wire_init(struct event_base *base, const char *run_dir, const char *hosts,
			bool box_wired, uint16_t port, unsigned base_port, bool relay_running)
{
	relay_on = relay_running;
	loop = base;
	hosts_path = xstrdup(hosts);
	dns_dir = xasprintf("%s/dns", run_dir);
	dns_path = xasprintf("%s/services", dns_dir);
	dns_staging_path = xasprintf("%s/dns-services", run_dir);
	rules_path = xasprintf("%s/services.nft", run_dir);
	rules_log_path = xasprintf("%s/services.nft.log", run_dir);
	if (mkdir(dns_dir, 0755) != 0 && errno != EEXIST)
		log_msg(LOG_LEVEL_WARNING, "cannot make %s: %s", dns_dir, strerror(errno));
	wired = box_wired;
	relay_port = port;
	ingress_base = base_port;
}
