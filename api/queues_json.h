#ifndef API_QUEUES_JSON_H
#define API_QUEUES_JSON_H

/*
 * GET /v1/queues[/NAME] (docs/queues.md, "Watching the queues"): each job
 * queue, its shares and their jobs as the last scheduling pass saw them:
 *
 *   {"sampled_ms", "interval_ms", "queues": [{"name", "priority",
 *    "policy", "shares": [{"name", "kind", "strategy", "borrow_limit",
 *    "weight", "usage", "guarantee", "in_use", "borrowed", "lent",
 *    "running", "waiting", "capacity": [{"instance_type", "guarantee",
 *    "in_use", "borrowed", "lent"}], "users": [{"user", "running",
 *    "waiting", "hosts"}], "jobs": [{"name", "user", "state", "position",
 *    "reason", "instance_type", "count", "priority"}], "series": [{"t_ms",
 *    "guarantee", "in_use", "borrowed", "lent"}]}]}]}
 *
 * A guarantee of -1 (no guarantee: not a quota share) is null; a name or
 * user the caller may not see is null, as are an absent strategy, policy
 * and reason. The structs below only point at strings: whoever fills them
 * owns those.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* Hosts of one instance type, or (series) the sum over types. */
struct api_queue_cap {
	const char *type;
	int guarantee; /* -1: none */
	int in_use, borrowed, lent;
};

struct api_queue_sample {
	int64_t t_ms;
	int guarantee; /* -1: none */
	int in_use, borrowed, lent;
};

struct api_queue_user {
	const char *user; /* NULL: other users, taken together */
	int running, waiting, hosts;
};

struct api_queue_job {
	const char *name;   /* NULL: another user's */
	const char *user;   /* NULL: another user */
	const char *state;  /* "running", "starting", "releasing", "waiting" */
	size_t position;    /* a waiting job's place in its queue; 0: none */
	const char *reason; /* why it waits; NULL for the others */
	const char *type;
	int count;
	int priority;
};

struct api_queue_share {
	const char *name; /* NULL: another user's share of the default queue */
	const char *kind; /* "quota", "fairshare" or "fifo" */
	const char *strategy; /* a quota share's sharing strategy, or NULL */
	int borrow_limit;     /* percent, -1: no limit */
	double weight, usage; /* fair share: weightFactor, decayed usage */
	int running, waiting;
	struct api_queue_cap total; /* type NULL: the sums over caps */
	struct api_queue_cap *caps;
	size_t n_caps;
	struct api_queue_user *users;
	size_t n_users;
	struct api_queue_job *jobs;
	size_t n_jobs;
	struct api_queue_sample *series;
	size_t n_series;
};

struct api_queue {
	const char *name;
	int priority;
	const char *policy; /* "QUOTA_SHARE", "FAIRSHARE" or NULL (FIFO) */
	struct api_queue_share *shares;
	size_t n_shares;
};

struct api_queues {
	int64_t sampled_ms;  /* the pass the figures are from; 0: none yet */
	int64_t interval_ms; /* between the samples of a series */
	struct api_queue *queues;
	size_t n;
};

/* Appends q's JSON to out. Returns 0, ERR_INVALID (text that is not
 * UTF-8) or ERR_TOOBIG. */
int api_queues_build(const struct api_queues *q, struct buf *out);

/*
 * Renders a GET /v1/queues answer for people: per queue its shares (kind,
 * guarantee, in use, borrowed, lent, running and waiting jobs), their
 * users and jobs (waiting ones with their place and reason). Returns 0,
 * or ERR_INVALID with err when json is not such an answer.
 */
int api_queues_table(const char *json, size_t len, struct buf *out,
		     struct buf *err);

#endif
