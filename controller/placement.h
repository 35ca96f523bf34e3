#ifndef CTRL_PLACEMENT_H
#define CTRL_PLACEMENT_H

/*
 * Where jobs run: free hosts, the hosts and ports of a new attempt, the
 * replacements of lost or drained hosts, and what the queue may hope for.
 * Host marks are read under ctx->hosts_lock inside each call.
 */
#include <stddef.h>

#include "common/buf.h"

struct ctrl_ctx;
struct ctrl_host;
struct db_job;
struct db_assignment;
struct db_queue_look;
struct api_job_spec;
struct ctrl_jobrt;

/*
 * Makes the hosts' busy marks current, unless *valid says they are (a
 * pass reads the assignments only when it is about to pick hosts).
 */
void ctrl_place_busy_refresh(struct ctrl_ctx *ctx, int *valid);

/* Registered, not lost and not removed. */
int ctrl_place_host_live(const struct ctrl_host *h);
/* Live and not drained: it may take work. */
int ctrl_place_host_usable(const struct ctrl_host *h);

/* Whether a host of the attempt is drained (it may have to move). */
int ctrl_place_any_drained(struct ctrl_ctx *ctx, const struct db_assignment *as,
			   size_t n);

/*
 * The first free host of type from ctx->hosts[*from] on that is not among
 * chosen[0..n) (entries may be NULL), or NULL; *from moves past it.
 * Caller holds hosts_lock.
 */
const char *ctrl_place_pick_free(struct ctrl_ctx *ctx, const char *type,
				 size_t *from, const char **chosen, size_t n);

/*
 * The attempt's ports: count consecutive ports from a fresh random base,
 * checked free on this machine. Returns the first (MASTER_PORT).
 */
int ctrl_place_ports(int count);

/*
 * A free host for algo-(index+1) of a job (rt: its runtime cache, NULL:
 * none), of that place's instance type and not among chosen[0..n), or
 * NULL. Caller holds jobs_lock and hosts_lock.
 */
const char *ctrl_place_spare(struct ctrl_ctx *ctx, const struct ctrl_jobrt *rt,
			     int index, const char **chosen, size_t n);

/* The instance type of algo-(index+1), group after group. */
const char *ctrl_place_type_of_index(const struct api_job_spec *spec,
				     int index);

/*
 * Places a job that holds no attempt yet: picks free live hosts for every
 * instance and starts attempt 1 on them, or marks the job queued with what
 * it waits for. Returns 1 when the job must fail as it starts (its image
 * cannot be run; fail says why, a ClientError), else 0.
 */
int ctrl_place_job(struct ctrl_ctx *ctx, const struct db_job *job,
		   int *busy_valid, struct buf *fail);

/*
 * The same on hosts[0..n_hosts), the scheduler's choice for a job of one
 * instance type: the job starts there when every one of them is still
 * free, else it stays queued with a message saying which was taken.
 */
int ctrl_place_job_on(struct ctrl_ctx *ctx, const struct db_job *job,
		      const char *const *hosts, size_t n_hosts,
		      int *busy_valid, struct buf *fail);

/*
 * The hosts of a restarting job's next attempt: each host of the failed
 * one while it is usable, a lost or drained one, and suspect (the host
 * the failure was laid at, NULL: none), replaced by a free live host of
 * its instance type (or kept, when drained or suspected and no spare is
 * free, unless quarantined), and a spare for each place from n to slots
 * (an elastic job growing back: controller/elastic.h; else slots is n).
 * Fills chosen[host_index] (slots entries); returns how many places found
 * no host.
 */
size_t ctrl_place_replacements(struct ctrl_ctx *ctx, const struct db_job *job,
			       const struct db_assignment *as, size_t n,
			       size_t slots, const char *suspect,
			       const char **chosen);

/* Free live hosts that can serve type, given the current assignments. */
int ctrl_place_free_count(struct ctrl_ctx *ctx, const char *type);

/*
 * Which queued jobs are worth a look: those of every instance type with a
 * free host (copied into *types, to free with ctrl_place_free_types()), of
 * any type when a free host serves every type. Returns whether any host is
 * free.
 */
int ctrl_place_free_kinds(struct ctrl_ctx *ctx, struct db_queue_look *look,
			  char ***types);
void ctrl_place_free_types(char **types, size_t n);

/* Why a queued job waits: "Waiting for 2 free hosts of type T (1 free now)". */
void ctrl_wait_message(struct buf *b, int want, const char *type, int free);

/* What keeps the hosts of a type from a job (counts of hosts). */
struct ctrl_wait_holders {
	int hosts;	 /* of the type, in the inventory */
	int busy;	 /* running another job */
	int warm;	 /* held by an Available warm pool */
	int drained;	 /* drained, not by quarantine */
	int quarantined; /* drained by quarantine (controller/quarantine.c) */
	int down;	 /* not registered, or lost */
};

/* Counts what holds the hosts of type (NULL: any). Caller holds hosts_lock;
 * the busy and warm marks are those of the last ctrl_place_busy_refresh(). */
void ctrl_wait_holders_count(struct ctrl_ctx *ctx, const char *type,
			     struct ctrl_wait_holders *w);

/*
 * The same message, naming what holds the hosts that are not free (w NULL:
 * nothing named): "Waiting for 1 free host of type T (0 free now); hosts
 * held: 2 by other jobs, 1 by a warm pool, 1 drained, 1 quarantined, 1
 * not responding" (the parts that are not 0), or "...; no host serves
 * this type".
 */
void ctrl_wait_message_why(struct buf *b, int want, const char *type, int free,
			   const struct ctrl_wait_holders *w);

#endif
