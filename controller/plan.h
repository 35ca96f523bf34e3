#ifndef CTRL_PLAN_H
#define CTRL_PLAN_H

/*
 * The controller's decisions about one job, as pure functions: what is
 * known of the job in, one action out. No I/O, no locks, no clock.
 * controller/jobrun.c gathers the facts (the store, the host table, the
 * time), asks ctrl_plan() and carries the action out; tests/controller/
 * test_plan.c walks the table of transitions.
 */
#include <stddef.h>

#include "controller/job_state.h"
#include "common/buf.h"

struct db_assignment;

/*
 * FailureReason: a category prefix ("AlgorithmError: ") and the first 1024
 * characters of output/failure (the agent cuts the file's text), as the
 * service writes it.
 */
#define CTRL_REASON_MAX (1024 + 32)

/* What the reports of an attempt add up to. */
struct ctrl_plan_summary {
	size_t n;
	size_t running; /* phase >= running */
	size_t downloading;
	size_t exited_ok; /* every process exited 0 */
	size_t done;
	size_t finished; /* done or error or exited (nothing more comes) */
	int failed;
	int hung; /* the failure named is a hang the agent found */
	/* MPI mode: algo-1's mpirun ended; followers not done yet, running
	 * or exited (a daemon killed as mpirun ended) and waiting for the
	 * controller's word. */
	int leader_exited;
	size_t followers_waiting;
	struct buf reason; /* why it failed, at most CTRL_REASON_MAX */
	/* The host the failure is laid at: the first failing rank's, or the
	 * host that reported an error; NULL when none is (a lost host, no
	 * failure). Points into the assignments summarized. */
	const char *culprit;
	/* Infrastructure checks (docs/distributed.md): how many hosts
	 * passed them, the slowest's time, and the host_index + 1 of the
	 * one whose failure is the reason (0: none). */
	size_t checked;
	int64_t check_ms;
	int check_failed;
	/* Script mode: the versions the ranks run, as the first host that
	 * said so reported them (api_report.runtime); empty: none yet. */
	struct buf runtime;
};

/*
 * Adds up the reports of an attempt's n assignments; lost[i] says that
 * the host of as[i] stopped responding. In MPI mode algo-1's outcome
 * (mpirun's) decides: the other hosts serve mpirun's daemons and end when
 * it does. The first failure in time names the culprit. Release s->reason.
 */
void ctrl_plan_summarize(const struct db_assignment *as, const int *lost,
			 size_t n, int mpi, struct ctrl_plan_summary *s);

/* What the controller knows of a job when it looks at it. */
struct ctrl_plan_in {
	enum ctrl_job_state cur;
	int attempt;	       /* 0: not placed yet */
	int stop_max_runtime;  /* the stop is for MaxRuntimeInSeconds */
	int runtime_exceeded;  /* it ran longer than MaxRuntimeInSeconds */
	int settled;	       /* every host is done, failed or lost */
	int any_drained;       /* a host of the attempt was drained */
	int drain_move_failed; /* a planned move could not begin now */
	int retryable;	       /* the failure is worth another attempt */
	int retries_left;      /* restarts the job may still make */
	int planned_move;      /* the attempt ends by a planned move */
	/* a host failed its infrastructure checks and no spare replaces
	 * it now: an ordinary failure */
	int check_replace_failed;
	/* attempt > 0 and no hosts: preempted, back in the queue */
	int queued_again;
	size_t restart_missing;	  /* restarting: hosts with no replacement */
	int restart_wait_over;	  /* restarting: waited past --restart-wait */
	long restart_wait_s;	  /* --restart-wait, for the message */
	/* a hang stops the job: StalledTrainingRule's stop_training_on_fire */
	int stop_on_stall;
	const struct ctrl_plan_summary *s; /* attempt > 0 */
};

enum ctrl_plan_act {
	CTRL_PLAN_NOTHING,
	CTRL_PLAN_PLACE,	/* no hosts: find some, start attempt N+1 */
	CTRL_PLAN_FINISH,	/* move to the terminal state `to` */
	CTRL_PLAN_TIME_OUT,	/* record MaxRuntimeExceeded, -> Stopping */
	CTRL_PLAN_MOVE,		/* try a planned move off drained hosts */
	CTRL_PLAN_RESTART,	/* -> Restarting (attempt failed, retries) */
	CTRL_PLAN_NEXT_ATTEMPT, /* restarting and settled: attempt N+1 */
	CTRL_PLAN_ADVANCE,	/* walk forward to `to` */
	CTRL_PLAN_REQUEUE,	/* preempted and settled: back to the queue */
	CTRL_PLAN_STALL_STOP,	/* a hang and stop_training_on_fire: stop */
	CTRL_PLAN_REPLACE,	/* replace a host that failed its checks */
};

struct ctrl_plan_out {
	enum ctrl_plan_act act;
	/* Set on every host of the attempt first: "stop", "abort" or NULL. */
	const char *actions;
	enum ctrl_job_state to; /* FINISH, ADVANCE */
	const char *message;	/* FINISH: the transition's message */
	int has_reason;		/* FINISH: text is the failure reason */
	int upload;		/* FINISH: collect the model and output */
	int then_complete;	/* ADVANCE: and Completed once Uploading */
	int stop_followers;	/* MPI: mpirun ended, stop the others */
	/* RESTART's and STALL_STOP's message, FINISH's reason */
	struct buf text;
};

/* Decides; out->text is (re)set, release it with buf_release(). */
void ctrl_plan(const struct ctrl_plan_in *in, struct ctrl_plan_out *out);

#endif
