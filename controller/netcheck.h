#ifndef CTRL_NETCHECK_H
#define CTRL_NETCHECK_H

/*
 * The network part of the infrastructure checks, judged by the
 * controller (docs/distributed.md, "Infrastructure checks"): every host
 * of a multi-host attempt reports its best round trip and bandwidth to
 * the others (agent/netcheck.h); a host fails when it reached none of
 * them, or its figures are far from the attempt's median (the median of
 * the hosts' figures), by the limits below. With two hosts both measure
 * the one link between them: only an unreachable peer is found then.
 */
#include <stddef.h>
#include <stdint.h>

#include "api/agent_proto.h"
#include "common/buf.h"

struct db_assignment;
struct ctrl_config;

struct ctrl_net_limits {
	long rtt_factor;   /* over median * rtt_factor ... */
	long rtt_floor_us; /* ... and over median + rtt_floor_us */
	long bw_factor;	   /* under median / bw_factor */
};

/* The limits the operator set (--infra-check-net-*). */
void ctrl_netcheck_limits(const struct ctrl_config *cfg,
			  struct ctrl_net_limits *lim);

/* The attempt's medians, for the transition that says the checks passed. */
struct ctrl_net_median {
	size_t hosts; /* hosts that reported figures (0: none did) */
	int64_t rtt_us;
	int64_t mbps;
};

/*
 * The verdict on n hosts' figures (f[i].peers 0: host i ran no network
 * check): the 1-based position of the host that fails (the worst one),
 * why saying how ("its round trip to its peers is 40.2 ms, 96x the job's
 * median of 0.42 ms"), or 0 when none does. med gets the medians. Pure.
 */
size_t ctrl_netcheck_judge(const struct api_net_figures *f, size_t n,
			   const struct ctrl_net_limits *lim,
			   struct ctrl_net_median *med, struct buf *why);

/*
 * ctrl_netcheck_judge() over the reports of an attempt's n assignments:
 * the failing host's host_index + 1, 0 when none fails. A host with no
 * report yet counts as one with no figures.
 */
int ctrl_netcheck_verdict(const struct db_assignment *as, size_t n,
			  const struct ctrl_net_limits *lim,
			  struct ctrl_net_median *med, struct buf *why);

#endif
