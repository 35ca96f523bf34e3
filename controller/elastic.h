#ifndef CTRL_ELASTIC_H
#define CTRL_ELASTIC_H

/*
 * Elastic jobs (docs/distributed.md, "Elastic jobs"; the tag in
 * api/elastic.h): a job that names the fewest hosts it trains on goes on
 * with fewer when a host is lost and no spare is free within
 * --elastic-wait, and grows back to its instance count, from a checkpoint
 * asked for at once, when hosts are free again (controller/elastic.c).
 */
#include <stddef.h>

struct ctrl_ctx;
struct db_job;

/* The fewest hosts job trains on; 0 when it is not elastic. */
int ctrl_elastic_min(struct ctrl_ctx *ctx, const char *name);

/*
 * The places job's next attempt fills: its instance count for an elastic
 * job (whose last attempt, with n hosts, may have had fewer), else n.
 */
size_t ctrl_elastic_slots(struct ctrl_ctx *ctx, const struct db_job *job,
			  size_t n);

/*
 * Moves the hosts of chosen[0..slots) (NULL where none was found) to its
 * front, keeping their order; returns how many there are.
 */
size_t ctrl_elastic_compact(const char **chosen, size_t slots);

/*
 * Whether a running elastic job with n hosts should grow back now: it has
 * fewer than its instance count and enough free hosts of its type for
 * the rest. *want is its instance count.
 */
int ctrl_elastic_can_grow(struct ctrl_ctx *ctx, const struct db_job *job,
			  size_t n, int *want);

#endif
