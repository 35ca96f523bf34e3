#ifndef AGENT_NETCHECK_H
#define AGENT_NETCHECK_H

/*
 * The network part of the infrastructure checks (docs/distributed.md,
 * "Infrastructure checks"): before an attempt's program starts, every
 * host of a multi-host attempt listens on its port of the attempt's
 * range and measures, over TCP, the round trip and the bandwidth to the
 * others (at most AGENT_NET_MAX_PEERS of them, its next ones in host
 * order). The host reports its best figures; the controller compares
 * every host's with the attempt's median (controller/netcheck.h).
 *
 * On the wire, one connection per peer, client to server:
 *   'P'                 the server answers 'P' (a round trip)
 *   'B' len(4, BE) data the server answers 'A' once len bytes came
 * A thread serves peers and another measures, so the agent's loop never
 * waits; the server lives until agent_netcheck_free() (the program's
 * start, or the assignment's end), since peers may still measure.
 */
#include <stddef.h>
#include <stdint.h>

#include "api/agent_proto.h"
#include "common/buf.h"

#define AGENT_NET_MAX_PEERS 8
/* The whole network part's budget (peers' agents start at other times). */
#define AGENT_NET_BUDGET_MS 8000
#define AGENT_NET_PINGS 8
/* How long the bandwidth part of one peer lasts (when a chunk comes back
 * sooner), and its chunk; a peer's whole share is bounded too. */
#define AGENT_NET_BULK_MS 250
#define AGENT_NET_CHUNK (64 * 1024)

/* What was measured against one peer (-1: it never answered). */
struct agent_net_peer {
	int64_t rtt_us;
	int64_t mbps;
};

struct agent_netcheck;

/* Host i's port: port_base + 2i + 1 (free until the program starts). */
int agent_netcheck_port(int port_base, size_t host_index);

/*
 * Starts serving on this host's port and measuring against the others
 * (addrs[i]: host i's address, n of them, this host is me) within
 * budget_ms. NULL with err set when the port cannot be listened on.
 */
struct agent_netcheck *agent_netcheck_start(const char *const *addrs, size_t n,
					    size_t me, int port_base,
					    int64_t budget_ms, struct buf *err);

/* 1 with *out filled once the measuring is over; 0 before. */
int agent_netcheck_done(struct agent_netcheck *nc, struct api_net_figures *out);

/* Stops serving and measuring; nc may be NULL. */
void agent_netcheck_free(struct agent_netcheck *nc);

/*
 * The figures a host reports from what it measured against its n peers:
 * how many answered, the lowest round trip and the highest bandwidth
 * among them (-1 when none did). Pure.
 */
void agent_netcheck_best(const struct agent_net_peer *p, size_t n,
			 struct api_net_figures *out);

/* The median of n values (sorts v; the lower middle for even n). Pure. */
int64_t agent_netcheck_median(int64_t *v, size_t n);

#endif
