#ifndef AGENT_NETISO_H
#define AGENT_NETISO_H

/* EnableNetworkIsolation (agent/netiso.c). */
#include "common/buf.h"

struct agent_ctx;
struct agent_assign;

/*
 * Puts the assignment's ranks behind the firewall: a cgroup they join
 * (a->netiso_procs) whose traffic reaches only the job's hosts and
 * loopback, never the controller (any of the members whose URLs are in
 * controllers, NULL-terminated). Returns 0, or an error code with err
 * saying why (nothing is left set up then).
 */
int agent_netiso_setup(char *const *controllers, struct agent_assign *a,
		       struct buf *err);
/* Removes the rules and the cgroup (also those of an earlier agent). */
void agent_netiso_teardown(struct agent_assign *a);

#endif
