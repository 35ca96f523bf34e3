#ifndef AGENT_ASSIGNMENT_H
#define AGENT_ASSIGNMENT_H

/*
 * One assignment's actual state: what every step reads and writes. The
 * state machine that moves it is assign.c (agent/assign.h).
 */
#include <stddef.h>
#include <stdint.h>

#include "agent/ckptwatch.h"
#include "agent/hang.h"
#include "agent/hangwatch.h"
#include "agent/ident.h"
#include "agent/lines.h"
#include "agent/proc.h"
#include "agent/task.h"
#include "agent/telemetry.h"
#include "api/agent_proto.h"
#include "common/buf.h"

struct agent_req;

enum agent_task_kind {
	AGENT_TASK_NONE = 0,
	AGENT_TASK_STAGE, /* checkpoint restore, channels, code */
	AGENT_TASK_SYNC,  /* checkpoint folder -> checkpoint URI */
	AGENT_TASK_PACK	  /* final checkpoint sync, then the two tar.gz */
};

/*
 * How often a running assignment's checkpoint folder is mirrored, and the
 * least time between two mirrors when files keep completing.
 */
#define AGENT_CKPT_SYNC_MS 2000
#define AGENT_CKPT_SYNC_MIN_MS 100

enum agent_upload_step {
	AGENT_UP_NONE = 0,
	AGENT_UP_PACKING,
	AGENT_UP_MODEL,
	AGENT_UP_OUTPUT,
	AGENT_UP_FINISHED
};

/* The last lines a rank wrote, for the failure reason. */
#define AGENT_TAIL_LINES 3
#define AGENT_TAIL_LEN 240

struct agent_rank {
	struct agent_proc proc;
	uint64_t start_ticks; /* kernel start time, for the watchdog */
	struct agent_lines out;
	struct agent_lines err;
	char tail[AGENT_TAIL_LINES][AGENT_TAIL_LEN + 1];
	int tail_next; /* ring position */
	int tail_n;
	int rank;
	int pidfd;   /* adopted processes: watched through a pidfd */
	int adopted; /* not our child: no pipes, exit status unknown */
	struct agent_hang hang; /* its progress (hangwatch.c) */
};

struct agent_assign {
	struct agent_assign *next;
	/* Identity: a job of the same name created after this one was
	 * deleted has another uid, and is another assignment. */
	char *job;
	char *job_uid; /* may be NULL (an older controller) */
	int attempt;
	char *algo;
	/* Desired: the last copy from the controller. */
	struct api_assignment spec;
	int have_spec;
	int desired; /* present in the last work answer */
	enum api_action action;
	/* Actual. */
	char *dir; /* NULL for an assignment we never prepared */
	enum api_phase phase;
	int64_t started_ms;
	struct agent_rank *ranks;
	size_t n_ranks;
	char *failure;
	char *error;
	int bound;		  /* ranks see the job dir at /opt/ml */
	char *netiso_procs;	  /* isolated: cgroup.procs the ranks join */
	struct agent_ident ident; /* spec.run_as on this host */
	/* Workers and upload. */
	struct agent_task task;
	/* Pipe mode's writer while the ranks run (pipe.c), apart from
	 * the staging, sync and pack worker in task. */
	struct agent_task pipe;
	enum agent_task_kind task_kind;
	char *task_error;
	/* Script mode: the Python and framework versions the ranks run
	 * (agent/fwcheck.h), for the report; NULL: not known. */
	char *runtime_note;
	int task_ok;	    /* the worker said "ok" */
	int staged;	    /* staging succeeded: ready to launch */
	int64_t spec_at_ms; /* wall clock when the spec arrived */
	int64_t check_ms;   /* infrastructure checks passed in this - 1
			     * ms; 0: none ran (infracheck.h) */
	int restage;	    /* adopted while staging: stage again */
	enum agent_upload_step up_step;
	struct agent_req *up_req;
	int up_tries;
	int64_t up_retry_at;
	/* Stopping. */
	int term_sent;
	int64_t kill_at; /* monotonic; 0 none */
	/* A checkpoint-now request is out (agent/ckptnow.h): SIGTERM when
	 * the program answers it or at term_at (monotonic). */
	int ckpt_now;
	int64_t term_at;
	int kill_sent;
	int fenced;
	int64_t sync_at;      /* monotonic: next checkpoint mirror */
	int64_t sync_started; /* monotonic: when the last one began */
	struct agent_ckpt_watch watch;
	/* The ranks ended: one more mirror with every file final is due. */
	int final_sync_due;
	/* Bookkeeping. */
	int changed;	     /* state.json and a status report are due */
	int final_in_flight; /* a status POST carrying the final state */
	int final_acked;     /* ... has been accepted: we may forget it */
	struct agent_tm_prev tm_prev; /* telemetry.c: its ranks' CPU ticks */
	struct agent_hangwatch hw;    /* hang detection (hangwatch.c) */
};

#endif
