/* relay.h: the connections boxd forwards itself, on a thread of its own so
 * that a GiB going through never slows an API answer.
 *
 * Two ways in:
 * - the relay's TCP listener on 127.0.0.1 (an ephemeral port): the services'
 *   nftables rules DNAT there the connections the kernel cannot forward
 *   itself (to a listener on ::1 only, to an IPv6 address, to vsock). The
 *   relay reads the connection's original destination (SO_ORIGINAL_DST) and
 *   looks it up among the routes;
 * - the way in from the control plane: one vsock listener per ingress entry
 *   (port `vsock_port`), whose connections go to 127.0.0.1:target_port, or
 *   to [::1]:target_port when nothing takes IPv4 there.
 * Bytes are copied both ways until each side has closed (half-close passed
 * on); an idle connection holds no buffer. */
#ifndef BOXD_RELAY_H
#define BOXD_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct relay_route {
	uint32_t ip;                    /* the original destination, network order */
	uint16_t port;                  /* host order */
	struct sockaddr_storage target; /* AF_INET, AF_INET6 or AF_VSOCK */
	socklen_t target_length;
};

struct relay_ingress {
	unsigned vsock_port;
	unsigned target_port;
};

/* Starts the thread and the TCP listener (in the caller's network
 * namespace); `*tcp_port` gives the port wanted (the last boxd's, which the
 * kernel's rules still name; 0: any) and gets the port it listens on. Peers of the vsock listeners must be
 * among `allowed_cids` (the host, and those of --vsock-allow-cid; copied):
 * the policy of listeners_cid_allowed(), which this layer cannot call.
 * False with a sentence when it cannot. */
bool relay_start(const unsigned *allowed_cids, int cid_count, uint16_t *tcp_port, char *error,
		 size_t error_size);

/* Replaces the routes and the ingress listeners (copied; callable from the
 * loop thread while connections run, and before relay_start()): a
 * connection accepted after this returns follows the new routes; the
 * relay's thread opens and closes the vsock listeners a moment later (one
 * whose port stays is kept, backlog and all). Connections already open keep
 * going until they close. An ingress port that cannot be listened on is
 * logged (no vsock at all: once, as information) and left out; it is tried
 * again at the next relay_set(). */
void relay_set(const struct relay_route *routes, size_t route_count,
	       const struct relay_ingress *ingress, size_t ingress_count);

/* Activity of the way in: connections open now, and the time (ms since the
 * epoch) the last one was accepted (0: none yet). Any thread. */
unsigned relay_ingress_open(void);
int64_t relay_last_ingress_ms(void);
/* Every connection open now (both ways in). Any thread. */
unsigned relay_connections_open(void);

/* Ends the thread, closing every connection and listener, and forgets the
 * tables. Harmless when the relay is not running. */
void relay_stop(void);

#endif
