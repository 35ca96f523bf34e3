/*
 * Tests controller/sched/decide.c: ctrl_sched_decide() over a table of
 * pools (hosts, shares, running and queued jobs, the clock) and the starts,
 * preemptions and reasons each must give: quota shares with lending and
 * borrowing, preemption and the no-thrash rule, fair share and
 * computeReservation, priorities, backfill, topology, gang placement, the
 * two-team case of the issue and bad input. A last case times one decision
 * at the scale of the benchmark and prints the figure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/sched/decide.h"
#include "common/buf.h"

#define MAX_HOSTS 12
#define MAX_SHARES 4
#define MAX_RUN 6
#define MAX_Q 8

struct share_row {
	const char *name, *queue;
	int qprio;
	int quota;
	const char *type;
	int cap;
	enum ctrl_sched_sharing sharing;
	int borrow;
	int in_share;
	int group; /* fair group + 1; 0: not fair-shared */
	double weight, usage;
	int resv;
	int best_effort;
};

struct run_row {
	size_t share;
	const char *type;
	int count;
	size_t hosts[8];
	int prio;
	int64_t started, ends;
	int releasing;
};

struct q_row {
	size_t share;
	const char *type;
	int count;
	int prio;
	int64_t seq;
	int64_t max_rt;
	int claimed;
};

struct row {
	const char *name;
	/* in */
	struct ctrl_sched_host hosts[MAX_HOSTS];
	struct share_row shares[MAX_SHARES];
	struct run_row running[MAX_RUN];
	struct q_row queued[MAX_Q];
	int64_t now, min_run;
	double charge;
	/* out */
	const char *starts;   /* "q1=h1,h2 q3=h4", in the order given */
	const char *preempts; /* "r0>q1 r2>q1" */
	/* why per queued job: exact, or a substring after '~'; NULL:
	 * unchecked */
	const char *why[MAX_Q];
	const char *positions; /* "1 0 2", NULL: unchecked */
};

#define NOW 1000000
#define GPU "gpu"
/* clang-format off */
#define H(n) { .name = (n), .type = GPU, .usable = 1 }
#define HR(n, r) { .name = (n), .type = GPU, .domain = (r), .usable = 1 }
#define H4 H("h1"), H("h2"), H("h3"), H("h4")
#define QUOTA(n, c, sh, pct) { .name = (n), .queue = "team", .quota = 1, \
	.type = GPU, .cap = (c), .sharing = (sh), .borrow = (pct) }
#define LAB CTRL_SCHED_LEND_AND_BORROW
#define FAIR(n, g, w, u) { .name = (n), .queue = "shared", .group = (g), \
	.weight = (w), .usage = (u) }
#define FIFO(n, q, p) { .name = (n), .queue = (q), .qprio = (p) }
/* A running job of share s on hosts ..., started at st, ending at e. */
#define RUN(s, c, st, e, ...) { .share = (s), .type = GPU, .count = (c), \
	.hosts = { __VA_ARGS__ }, .started = (st), .ends = (e) }
#define RUNP(s, c, p, st, ...) { .share = (s), .type = GPU, .count = (c), \
	.hosts = { __VA_ARGS__ }, .prio = (p), .started = (st) }
#define Q(s, c, q) { .share = (s), .type = GPU, .count = (c), .seq = (q) }
#define QP(s, c, p, q) { .share = (s), .type = GPU, .count = (c), \
	.prio = (p), .seq = (q) }
#define QT(s, c, q, rt) { .share = (s), .type = GPU, .count = (c), \
	.seq = (q), .max_rt = (rt) }
/* A queued job that an earlier decision preempted for. */
#define QC(s, c, q) { .share = (s), .type = GPU, .count = (c), .seq = (q), \
	.claimed = 1 }
#define SEC(x) (NOW + (x) * 1000)

static const struct row rows[] = {
	/* Quota shares: guarantee, limits, borrowing and lending. */
	{ .name = "a quota share starts within its guarantee",
	  .hosts = { H4 }, .shares = { QUOTA("a", 2, CTRL_SCHED_RESERVE, 0) },
	  .queued = { Q(0, 2, 0) },
	  .starts = "q0=h1,h2" },
	/* A share's first job larger than its guarantee leaves it not owed,
	 * so an older borrower sorts first and takes what a preemption for
	 * the share's second job released; the claim gives those hosts to
	 * the job they were released for. */
	{ .name = "without a claim, an older borrower takes released hosts",
	  .hosts = { H4 },
	  .shares = { QUOTA("a", 2, LAB, -1), QUOTA("b", 1, LAB, -1),
		      QUOTA("c", 1, LAB, -1) },
	  .running = { RUN(1, 1, 0, 0, 2), RUN(2, 1, 0, 0, 3) },
	  .queued = { Q(2, 2, 0), Q(0, 4, 1), Q(0, 2, 2) },
	  .starts = "q0=h1,h2" },
	{ .name = "hosts a preemption released go to the job it was for",
	  .hosts = { H4 },
	  .shares = { QUOTA("a", 2, LAB, -1), QUOTA("b", 1, LAB, -1),
		      QUOTA("c", 1, LAB, -1) },
	  .running = { RUN(1, 1, 0, 0, 2), RUN(2, 1, 0, 0, 3) },
	  .queued = { Q(2, 2, 0), Q(0, 4, 1), QC(0, 2, 2) },
	  .starts = "q2=h1,h2" },
	{ .name = "RESERVE never borrows",
	  .hosts = { H4 }, .shares = { QUOTA("a", 2, CTRL_SCHED_RESERVE, 0) },
	  .queued = { Q(0, 2, 0), Q(0, 1, 1) },
	  .starts = "q0=h1,h2",
	  .why = { NULL, "1st in queue team; share a at 2 of 2 gpu, "
			 "borrowing 0; at its quota limit" } },
	{ .name = "LEND lends but never borrows",
	  .hosts = { H4 }, .shares = { QUOTA("a", 2, CTRL_SCHED_LEND, 100) },
	  .queued = { Q(0, 2, 0), Q(0, 1, 1) },
	  .starts = "q0=h1,h2", .why = { NULL, "~at its quota limit" } },
	{ .name = "LEND_AND_BORROW borrows up to borrowLimit percent",
	  .hosts = { H4 }, .shares = { QUOTA("a", 2, LAB, 50) },
	  .queued = { Q(0, 2, 0), Q(0, 1, 1), Q(0, 1, 2) },
	  .starts = "q0=h1,h2 q1=h3",
	  .why = { NULL, NULL, "1st in queue team; share a at 3 of 2 gpu, "
			       "borrowing 1; at its quota limit" } },
	{ .name = "the borrow limit rounds down (50% of 3 is 1)",
	  .hosts = { H4, H("h5"), H("h6") }, .shares = { QUOTA("a", 3, LAB, 50) },
	  .queued = { Q(0, 5, 0), Q(0, 4, 1) },
	  .starts = "q1=h1,h2,h3,h4", .why = { "~at its quota limit" } },
	{ .name = "a borrow limit of -1 is unlimited",
	  .hosts = { H4 }, .shares = { QUOTA("a", 1, LAB, -1) },
	  .queued = { Q(0, 4, 0) },
	  .starts = "q0=h1,h2,h3,h4" },
	{ .name = "a borrower takes a LEND share's idle hosts",
	  .hosts = { H4 },
	  .shares = { QUOTA("lender", 2, CTRL_SCHED_LEND, 0),
		      QUOTA("b", 1, LAB, -1) },
	  .queued = { Q(1, 3, 0) },
	  .starts = "q0=h1,h2,h3" },
	{ .name = "a RESERVE share's idle hosts are not lent",
	  .hosts = { H4 },
	  .shares = { QUOTA("r", 2, CTRL_SCHED_RESERVE, 0),
		      QUOTA("b", 1, LAB, -1) },
	  .queued = { Q(1, 3, 0), Q(1, 2, 1) },
	  .starts = "q1=h1,h2",
	  .why = { "1st in queue team; share b at 0 of 1 gpu, borrowing 0; "
		   "waiting for 3 hosts (4 free, 2 kept for guarantees)" } },
	{ .name = "a RESERVE share uses its guarantee first, then backfill "
		  "holds for the head",
	  .hosts = { H4 },
	  .shares = { QUOTA("r", 2, CTRL_SCHED_RESERVE, 0),
		      QUOTA("b", 1, LAB, -1) },
	  .queued = { Q(1, 3, 0), Q(1, 2, 1), Q(0, 2, 2) },
	  .starts = "q2=h1,h2",
	  .why = { "~waiting for 3 hosts (2 free)",
		   "~kept for the head job of the queue (backfill)" } },
	{ .name = "no capacity for the type in its share",
	  .hosts = { H4, { .name = "c1", .type = "cpu", .usable = 1 } },
	  .shares = { QUOTA("a", 2, LAB, -1) },
	  .queued = { { .share = 0, .type = "cpu", .count = 1 } },
	  .why = { "1st in queue team; share a at 0 of 0 cpu, borrowing 0; "
		   "no capacity for type cpu in its share" } },
	{ .name = "an owed share goes before a borrower of the same queue",
	  .hosts = { H("h1"), H("h2") },
	  .shares = { QUOTA("a", 1, LAB, -1), QUOTA("b", 2, LAB, 0) },
	  .queued = { Q(0, 2, 0), Q(1, 2, 1) },
	  .starts = "q1=h1,h2", .why = { "~waiting for 2 hosts (0 free)" } },
	/* Preemption across shares. */
	{ .name = "an owed share preempts a borrower, latest started first",
	  .hosts = { H4 },
	  .shares = { QUOTA("a", 2, LAB, -1), QUOTA("b", 2, LAB, 0) },
	  .running = { RUN(0, 2, 100, 0, 0, 1), RUN(0, 2, 200, 0, 2, 3) },
	  .queued = { Q(1, 2, 0) },
	  .preempts = "r1>q0",
	  .why = { "1st in queue team; share b at 0 of 2 gpu, borrowing 0; "
		   "waiting for 1 preempted job to release 2 hosts" } },
	{ .name = "only enough victims, lowest priority first",
	  .hosts = { H4 },
	  .shares = { QUOTA("a", 1, LAB, -1), QUOTA("b", 3, LAB, 0) },
	  .running = { RUNP(0, 1, 5, 100, 0), RUNP(0, 1, 1, 50, 1),
		       RUNP(0, 1, 1, 80, 2), RUNP(0, 1, 5, 300, 3) },
	  .queued = { Q(1, 2, 0) },
	  .preempts = "r2>q0 r1>q0",
	  .why = { "~waiting for 2 preempted jobs to release 2 hosts" } },
	{ .name = "no preemption when the victims cannot free enough",
	  .hosts = { H4 },
	  .shares = { QUOTA("a", 3, LAB, -1), QUOTA("b", 4, LAB, 0) },
	  .running = { RUN(0, 2, 100, 0, 0, 1), RUN(0, 2, 200, 0, 2, 3) },
	  .queued = { Q(1, 4, 0) },
	  .why = { "~waiting for 4 hosts (0 free)" } },
	{ .name = "no-thrash: jobs younger than min_run are not preempted",
	  .hosts = { H4 }, .min_run = 600000,
	  .shares = { QUOTA("a", 2, LAB, -1), QUOTA("b", 2, LAB, 0) },
	  .running = { RUN(0, 2, 500000, 0, 0, 1),
		       RUN(0, 2, 900000, 0, 2, 3) },
	  .queued = { Q(1, 2, 0) },
	  .why = { "~waiting for 2 hosts (0 free)" } },
	{ .name = "no-thrash: the old job goes instead of the young one",
	  .hosts = { H4 }, .min_run = 600000,
	  .shares = { QUOTA("a", 2, LAB, -1), QUOTA("b", 2, LAB, 0) },
	  .running = { RUN(0, 2, 100000, 0, 0, 1),
		       RUN(0, 2, 900000, 0, 2, 3) },
	  .queued = { Q(1, 2, 0) },
	  .preempts = "r0>q0" },
	{ .name = "releasing jobs count as freeing: no second preemption",
	  .hosts = { H4 },
	  .shares = { QUOTA("a", 1, LAB, -1), QUOTA("b", 2, LAB, 0) },
	  .running = { { .share = 0, .type = GPU, .count = 2,
			 .hosts = { 0, 1 }, .releasing = 1 },
		       RUN(0, 2, 200, 0, 2, 3) },
	  .queued = { Q(1, 2, 0) },
	  .why = { "1st in queue team; share b at 0 of 2 gpu, borrowing 0; "
		   "waiting for preempted jobs to release 2 hosts" } },
	{ .name = "a second owed job preempts for the rest of its guarantee",
	  .hosts = { H4 },
	  .shares = { QUOTA("a", 1, LAB, -1), QUOTA("b", 4, LAB, 0) },
	  .running = { { .share = 0, .type = GPU, .count = 2,
			 .hosts = { 0, 1 }, .releasing = 1 },
		       RUN(0, 2, 200, 0, 2, 3) },
	  .queued = { Q(1, 2, 0), Q(1, 2, 1) },
	  .preempts = "r1>q1",
	  .why = { "~waiting for preempted jobs to release 2 hosts",
		   "~waiting for 1 preempted job to release 2 hosts" } },
	{ .name = "a higher queue goes before an owed share",
	  .hosts = { H("h1"), H("h2") },
	  .shares = { { .name = "hi", .queue = "hi", .qprio = 10 },
		      QUOTA("b", 2, LAB, 0) },
	  .queued = { Q(0, 2, 5), Q(1, 2, 0) },
	  .starts = "q0=h1,h2", .why = { NULL, "~waiting for 2 hosts" } },
	/* Preemption within a share. */
	{ .name = "in-share preemption: a higher priority job takes the "
		  "share's latest started lower one",
	  .hosts = { H("h1"), H("h2") },
	  .shares = { { .name = "a", .queue = "team", .quota = 1, .type = GPU,
			.cap = 2, .in_share = 1 } },
	  .running = { RUNP(0, 1, 0, 100, 0), RUNP(0, 1, 0, 200, 1) },
	  .queued = { QP(0, 1, 5, 0) },
	  .preempts = "r1>q0",
	  .why = { "~waiting for 1 preempted job to release 1 host" } },
	{ .name = "without in-share preemption it waits at its limit",
	  .hosts = { H("h1"), H("h2") },
	  .shares = { QUOTA("a", 2, CTRL_SCHED_RESERVE, 0) },
	  .running = { RUNP(0, 1, 0, 100, 0), RUNP(0, 1, 0, 200, 1) },
	  .queued = { QP(0, 1, 5, 0) },
	  .why = { "~at its quota limit" } },
	{ .name = "in-share preemption never takes an equal priority",
	  .hosts = { H("h1"), H("h2") },
	  .shares = { { .name = "a", .queue = "team", .quota = 1, .type = GPU,
			.cap = 2, .in_share = 1 } },
	  .running = { RUNP(0, 1, 5, 100, 0), RUNP(0, 1, 5, 200, 1) },
	  .queued = { QP(0, 1, 5, 0) },
	  .why = { "~at its quota limit" } },
	{ .name = "in-share preemption when the share lacks hosts",
	  .hosts = { H("h1"), H("h2") },
	  .shares = { { .name = "f", .queue = "f", .in_share = 1 } },
	  .running = { RUNP(0, 1, 0, 100, 0), RUNP(0, 1, 0, 200, 1) },
	  .queued = { QP(0, 1, 5, 0) },
	  .preempts = "r1>q0",
	  .why = { "1st in queue f; waiting for 1 preempted job to release "
		   "1 host" } },
	/* Fair share. */
	{ .name = "fair share: usage times weight, the lowest first",
	  .hosts = { H("h1") },
	  .shares = { FAIR("x", 1, 0.125, 800), FAIR("y", 1, 1, 200) },
	  .queued = { Q(1, 1, 0), Q(0, 1, 1) },
	  .starts = "q1=h1",
	  .why = { "1st in queue shared; fair share y, weight 1; "
		   "waiting for 1 host (0 free)" } },
	{ .name = "fair share: equal weights, the least used first",
	  .hosts = { H("h1") },
	  .shares = { FAIR("x", 1, 1, 300), FAIR("y", 1, 1, 200) },
	  .queued = { Q(0, 1, 0), Q(1, 1, 1) },
	  .starts = "q1=h1" },
	{ .name = "start_charge_s alternates two equal shares",
	  .hosts = { H4 }, .charge = 10,
	  .shares = { FAIR("x", 1, 1, 0), FAIR("y", 1, 1, 0) },
	  .queued = { Q(0, 1, 0), Q(0, 1, 1), Q(0, 1, 2), Q(1, 1, 3),
		      Q(1, 1, 4), Q(1, 1, 5) },
	  .starts = "q0=h1 q3=h2 q1=h3 q4=h4" },
	{ .name = "without a start charge the first share takes all",
	  .hosts = { H4 },
	  .shares = { FAIR("x", 1, 1, 0), FAIR("y", 1, 1, 0) },
	  .queued = { Q(0, 1, 0), Q(0, 1, 1), Q(0, 1, 2), Q(1, 1, 3),
		      Q(1, 1, 4), Q(1, 1, 5) },
	  .starts = "q0=h1 q1=h2 q2=h3 q3=h4" },
	{ .name = "computeReservation with one active share",
	  .hosts = { H4 },
	  .shares = { { .name = "x", .queue = "s", .group = 1, .weight = 1,
			.resv = 50 },
		      { .name = "y", .queue = "s", .group = 1, .weight = 1,
			.usage = 100, .resv = 50 } },
	  .running = { RUN(0, 1, 0, 0, 0) },
	  .queued = { Q(0, 1, 0), Q(0, 1, 1), Q(1, 1, 2) },
	  .starts = "q0=h2 q2=h3",
	  .why = { NULL, "~kept by computeReservation" } },
	{ .name = "computeReservation with two active shares",
	  .hosts = { H4 },
	  .shares = { { .name = "x", .queue = "s", .group = 1, .weight = 1,
			.resv = 50 },
		      { .name = "y", .queue = "s", .group = 1, .weight = 1,
			.usage = 50, .resv = 50 },
		      { .name = "z", .queue = "s", .group = 1, .weight = 1,
			.usage = 100, .resv = 50 } },
	  .running = { RUN(0, 1, 0, 0, 0), RUN(1, 1, 0, 0, 1) },
	  .queued = { Q(0, 1, 0), Q(1, 1, 1), Q(2, 1, 2) },
	  .starts = "q0=h3 q2=h4",
	  .why = { NULL, "~kept by computeReservation" } },
	/* Priorities. */
	{ .name = "schedulingPriority, then submission order",
	  .hosts = { H("h1"), H("h2") }, .shares = { FIFO("f", "fifo", 0) },
	  .queued = { QP(0, 1, 0, 0), QP(0, 1, 5, 1), QP(0, 1, 5, 2) },
	  .starts = "q1=h1 q2=h2",
	  .why = { "1st in queue fifo; waiting for 1 host (0 free)" },
	  .positions = "1 0 0" },
	{ .name = "queue priority goes before submission order",
	  .hosts = { H("h1") },
	  .shares = { FIFO("lo", "lo", 1), FIFO("hi", "hi", 10) },
	  .queued = { Q(0, 1, 0), Q(1, 1, 5), Q(0, 1, 6) },
	  .starts = "q1=h1",
	  .why = { "1st in queue lo; waiting for 1 host (0 free)",
		   NULL, "2nd in queue lo; waiting for 1 host (0 free)" },
	  .positions = "1 0 2" },
	/* Backfill. */
	{ .name = "backfill: a short job ends before the head can start",
	  .hosts = { H4 }, .shares = { FIFO("f", "f", 0) },
	  .running = { RUN(0, 2, 0, SEC(100), 0, 1), RUN(0, 1, 0, 0, 2) },
	  .queued = { Q(0, 3, 0), QT(0, 1, 1, 50) },
	  .starts = "q1=h4", .why = { "~waiting for 3 hosts (1 free)" } },
	{ .name = "backfill refused: it would delay the head",
	  .hosts = { H4 }, .shares = { FIFO("f", "f", 0) },
	  .running = { RUN(0, 2, 0, SEC(100), 0, 1), RUN(0, 1, 0, 0, 2) },
	  .queued = { Q(0, 3, 0), QT(0, 1, 1, 200) },
	  .why = { NULL, "~kept for the head job of the queue (backfill)" } },
	{ .name = "backfill on the hosts the head will not need",
	  .hosts = { H4 }, .shares = { FIFO("f", "f", 0) },
	  .running = { RUN(0, 2, 0, SEC(100), 0, 1), RUN(0, 1, 0, 0, 2) },
	  .queued = { Q(0, 2, 0), QT(0, 1, 1, 200) },
	  .starts = "q1=h4" },
	{ .name = "best effort: a job that cannot start holds nothing back",
	  .hosts = { H4 },
	  .shares = { { .name = "d", .queue = "default", .best_effort = 1 } },
	  .running = { RUN(0, 2, 0, 0, 0, 1), RUN(0, 1, 0, 0, 2) },
	  .queued = { Q(0, 3, 0), QT(0, 1, 1, 200) },
	  .starts = "q1=h4",
	  .why = { "1st in queue default; waiting for 3 hosts (1 free); "
		   "hosts held: 3 by 2 other jobs" } },
	{ .name = "backfill: no shadow time, nothing passes the head",
	  .hosts = { H4 }, .shares = { FIFO("f", "f", 0) },
	  .running = { RUN(0, 2, 0, 0, 0, 1), RUN(0, 1, 0, 0, 2) },
	  .queued = { Q(0, 3, 0), QT(0, 1, 1, 1) },
	  .why = { NULL, "~(backfill)" } },
	{ .name = "a job within its guarantee is not held for a head",
	  .hosts = { H4 },
	  .shares = { FIFO("f", "f", 10), QUOTA("b", 2, LAB, 0) },
	  .running = { RUN(0, 2, 0, 0, 0, 1) },
	  .queued = { Q(0, 4, 0), Q(1, 2, 1), Q(0, 1, 2) },
	  .starts = "q1=h3,h4",
	  .why = { "~waiting for 4 hosts (2 free)", NULL, "~(backfill)" } },
	{ .name = "a head holds back only jobs of its own type",
	  .hosts = { H("h1"), { .name = "c1", .type = "cpu", .usable = 1 } },
	  .shares = { FIFO("f", "f", 0) },
	  .running = { RUN(0, 1, 0, 0, 0) },
	  .queued = { Q(0, 1, 0), { .share = 0, .type = "cpu", .count = 1,
				    .seq = 1 } },
	  .starts = "q1=c1", .why = { "~waiting for 1 host (0 free)" } },
	{ .name = "gang: all or nothing, no partial hold",
	  .hosts = { H4 }, .shares = { FIFO("f", "f", 0) },
	  .running = { RUN(0, 1, 0, SEC(100), 0) },
	  .queued = { Q(0, 4, 0), QT(0, 1, 1, 10) },
	  .starts = "q1=h2", .why = { "~waiting for 4 hosts (3 free)" } },
	{ .name = "a job larger than the pool waits and blocks nothing",
	  .hosts = { H4 }, .shares = { FIFO("f", "f", 0) },
	  .queued = { Q(0, 5, 0), Q(0, 1, 1) },
	  .starts = "q1=h1",
	  .why = { "1st in queue f; needs 5 hosts, the pool has 4 gpu" } },
	/* Topology. */
	{ .name = "topology: best fit in one rack",
	  .hosts = { HR("a1", "A"), HR("b1", "B"), HR("c1", "C"),
		     HR("a2", "A"), HR("b2", "B"), HR("c2", "C"),
		     HR("a3", "A"), HR("c3", "C"), HR("c4", "C") },
	  .shares = { FIFO("f", "f", 0) },
	  .queued = { Q(0, 2, 0), Q(0, 3, 1) },
	  .starts = "q0=b1,b2 q1=a1,a2,a3" },
	{ .name = "topology: the fewest racks, fullest first",
	  .hosts = { HR("a1", "A"), HR("b1", "B"), HR("c1", "C"),
		     HR("a2", "A"), HR("b2", "B"), HR("c2", "C"),
		     HR("a3", "A"), HR("c3", "C"), HR("c4", "C") },
	  .shares = { FIFO("f", "f", 0) },
	  .queued = { Q(0, 6, 0) },
	  .starts = "q0=c1,c2,c3,c4,a1,a2" },
	{ .name = "held and unusable hosts take no work",
	  .hosts = { { .name = "h1", .type = GPU, .usable = 1, .held = 1 },
		     { .name = "h2", .type = GPU },
		     H("h3") },
	  .shares = { FIFO("f", "f", 0) },
	  .queued = { Q(0, 1, 0), Q(0, 1, 1) },
	  .starts = "q0=h3",
	  .why = { NULL, "~waiting for 1 host (0 free)" } },
	{ .name = "message: what holds the hosts, by kind",
	  .hosts = { { .name = "h1", .type = GPU, .usable = 1, .held = 1,
		       .warm = 1 },
		     { .name = "h2", .type = GPU, .usable = 1, .held = 1 },
		     { .name = "h3", .type = GPU, .off = CTRL_SCHED_OFF_DRAINED },
		     { .name = "h4",
		       .type = GPU,
		       .off = CTRL_SCHED_OFF_QUARANTINED },
		     { .name = "h5", .type = GPU, .off = CTRL_SCHED_OFF_DOWN },
		     H("h6"), H("h7"), H("h8") },
	  .shares = { FIFO("f", "f", 0) },
	  .running = { RUN(0, 2, 0, 0, 5, 6), RUN(0, 1, 0, 0, 7) },
	  .queued = { Q(0, 1, 0) },
	  .why = { "1st in queue f; waiting for 1 host (0 free); hosts held: "
		   "3 by 2 other jobs, 1 by a warm pool, 1 restarting or "
		   "uploading, 1 drained, 1 quarantined, 1 not responding" } },
	/* The two teams on two hosts. */
	{ .name = "two teams, fair share: bob waits while alice holds both",
	  .hosts = { H("h1"), H("h2") },
	  .shares = { FAIR("alice", 1, 1, 20), FAIR("bob", 1, 1, 0) },
	  .running = { RUN(0, 2, 0, SEC(10), 0, 1) },
	  .queued = { Q(0, 2, 1), Q(0, 2, 2), Q(0, 2, 3), Q(1, 1, 4) },
	  .why = { NULL, NULL, NULL,
		   "1st in queue shared; fair share bob, weight 1; "
		   "waiting for 1 host (0 free); hosts held: 2 by 1 other "
		   "job" } },
	{ .name = "two teams, fair share: bob starts when a host frees",
	  .hosts = { H("h1"), H("h2") },
	  .shares = { FAIR("alice", 1, 1, 20), FAIR("bob", 1, 1, 0) },
	  .queued = { QT(0, 2, 1, 10), QT(0, 2, 2, 10), QT(0, 2, 3, 10),
		      QT(1, 1, 4, 60) },
	  .starts = "q3=h1",
	  .why = { "1st in queue shared; fair share alice, weight 1; "
		   "waiting for 2 hosts (1 free)",
		   "~waiting for 2 hosts (1 free)" },
	  .positions = "1 2 3 0" },
	{ .name = "two teams, quota: bob's submit preempts alice at once",
	  .hosts = { H("h1"), H("h2") }, .min_run = 60000,
	  .shares = { QUOTA("alice", 1, LAB, -1), QUOTA("bob", 1, LAB, -1) },
	  .running = { RUN(0, 2, NOW - 600000, 0, 0, 1) },
	  .queued = { Q(0, 2, 1), Q(1, 1, 4) },
	  .preempts = "r0>q1",
	  .why = { "~share alice at 0 of 1 gpu, borrowing 0; waiting for 2 "
		   "hosts (0 free)",
		   "~waiting for 1 preempted job to release 1 host" } },
	{ .name = "two teams, quota: not before alice's job ran min_run",
	  .hosts = { H("h1"), H("h2") }, .min_run = 60000,
	  .shares = { QUOTA("alice", 1, LAB, -1), QUOTA("bob", 1, LAB, -1) },
	  .running = { RUN(0, 2, NOW - 10000, 0, 0, 1) },
	  .queued = { Q(1, 1, 4) },
	  .why = { "1st in queue team; share bob at 0 of 1 gpu, borrowing 0; "
		   "waiting for 1 host (0 free); hosts held: 2 by 1 other "
		   "job" } },
	/* Messages. */
	{ .name = "message: the issue's example",
	  .hosts = { H("h1"), H("h2"), H("h3"), H("h4"), H("h5"), H("h6"),
		     H("h7"), H("h8") },
	  .shares = { { .name = "vision", .queue = "ml-team", .quota = 1,
			.type = GPU, .cap = 8, .sharing = LAB,
			.borrow = -1 } },
	  .running = { RUN(0, 8, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7) },
	  .queued = { Q(0, 4, 0), Q(0, 4, 1), Q(0, 4, 2) },
	  .why = { "~1st in queue ml-team", "~2nd in queue ml-team",
		   "3rd in queue ml-team; share vision at 8 of 8 gpu, "
		   "borrowing 0; waiting for 4 hosts (0 free); hosts held: "
		   "8 by 1 other job" },
	  .positions = "1 2 3" },
	/* Bad input. */
	{ .name = "bad input is skipped with a reason",
	  .hosts = { H("h1"), H("h2") }, .shares = { FIFO("f", "f", 0) },
	  .running = { { .share = 7, .type = GPU, .count = 1, .hosts = { 0 } },
		       { .share = 0, .type = GPU, .count = 2,
			 .hosts = { 99, 98 } } },
	  .queued = { Q(5, 1, 0), Q(0, 0, 1), Q(0, -3, 2),
		      { .share = 0, .count = 1, .seq = 3 }, Q(0, 1, 4) },
	  .starts = "q4=h2",
	  .why = { "skipped: share index 5 out of range",
		   "skipped: host count 0 is not positive",
		   "skipped: host count -3 is not positive",
		   "skipped: no instance type" },
	  .positions = "0 0 0 0 0" },
};
/* clang-format on */

/* The decide.h input a row stands for; the arrays live in the struct. */
struct built {
	struct ctrl_sched_host hosts[MAX_HOSTS];
	struct ctrl_sched_share shares[MAX_SHARES];
	struct ctrl_sched_cap caps[MAX_SHARES];
	struct ctrl_sched_running running[MAX_RUN];
	struct ctrl_sched_queued queued[MAX_Q];
	struct ctrl_sched_in in;
};

static void build_shares(const struct row *r, struct built *b)
{
	size_t i;

	for (i = 0; i < MAX_SHARES && r->shares[i].name; i++) {
		const struct share_row *s = &r->shares[i];
		struct ctrl_sched_share *o = &b->shares[i];

		o->name = s->name;
		o->queue = s->queue;
		o->queue_priority = s->qprio;
		o->quota = s->quota;
		b->caps[i].type = s->type;
		b->caps[i].count = s->cap;
		o->caps = s->quota ? &b->caps[i] : NULL;
		o->n_caps = s->quota ? 1 : 0;
		o->sharing = s->sharing;
		o->borrow_limit_pct = s->borrow;
		o->in_share_preemption = s->in_share;
		o->fair_group = s->group - 1;
		o->weight = s->weight;
		o->usage = s->usage;
		o->compute_reservation = s->resv;
		o->best_effort = s->best_effort;
	}
	b->in.shares = b->shares;
	b->in.n_shares = i;
}

static void build(const struct row *r, struct built *b)
{
	size_t i;

	memset(b, 0, sizeof(*b));
	for (i = 0; i < MAX_HOSTS && r->hosts[i].name; i++)
		b->hosts[i] = r->hosts[i];
	b->in.hosts = b->hosts;
	b->in.n_hosts = i;
	build_shares(r, b);
	for (i = 0; i < MAX_RUN && (r->running[i].type || r->running[i].count);
	     i++) {
		const struct run_row *x = &r->running[i];
		struct ctrl_sched_running *o = &b->running[i];

		o->id = (int64_t)i;
		o->share = x->share;
		o->type = x->type;
		o->count = x->count;
		o->hosts = x->hosts;
		o->priority = x->prio;
		o->started_ms = x->started;
		o->ends_ms = x->ends;
		o->releasing = x->releasing;
	}
	b->in.running = b->running;
	b->in.n_running = i;
	for (i = 0; i < MAX_Q && (r->queued[i].type || r->queued[i].count);
	     i++) {
		const struct q_row *x = &r->queued[i];
		struct ctrl_sched_queued *o = &b->queued[i];

		o->id = (int64_t)i;
		o->share = x->share;
		o->type = x->type;
		o->count = x->count;
		o->priority = x->prio;
		o->seq = x->seq;
		o->max_runtime_s = x->max_rt;
		o->claimed = x->claimed;
	}
	b->in.queued = b->queued;
	b->in.n_queued = i;
	b->in.now_ms = r->now ? r->now : NOW;
	b->in.min_run_ms = r->min_run;
	b->in.start_charge_s = r->charge;
}

/*
 * What holds for every decision: each start's hosts are distinct free
 * hosts of its type, no host is given twice, a started job has no reason
 * and position 0, a waiting one has a reason, a job starts at most once.
 */
static void check_sane(const struct ctrl_sched_in *in,
		       const struct ctrl_sched_out *out)
{
	unsigned char *taken = calloc(in->n_hosts + 1, 1);
	unsigned char *started = calloc(in->n_queued + 1, 1);
	size_t i, k;

	assert_non_null(taken);
	assert_non_null(started);
	for (i = 0; i < in->n_running; i++)
		for (k = 0; in->running[i].count > 0 &&
			    k < (size_t)in->running[i].count;
		     k++)
			if (in->running[i].hosts[k] < in->n_hosts)
				taken[in->running[i].hosts[k]] = 1;
	for (i = 0; i < out->n_starts; i++) {
		const struct ctrl_sched_start *st = &out->starts[i];
		const struct ctrl_sched_queued *q = &in->queued[st->job];

		assert_false(started[st->job]);
		started[st->job] = 1;
		for (k = 0; k < (size_t)q->count; k++) {
			const struct ctrl_sched_host *h =
				&in->hosts[st->hosts[k]];

			assert_true(st->hosts[k] < in->n_hosts);
			assert_false(taken[st->hosts[k]]);
			taken[st->hosts[k]] = 1;
			assert_true(h->usable && !h->held);
			assert_string_equal(h->type, q->type);
		}
	}
	for (i = 0; i < out->n_preempts; i++) {
		const struct ctrl_sched_preempt *p = &out->preempts[i];

		assert_true(p->job < in->n_running);
		assert_false(in->running[p->job].releasing);
		assert_true(p->for_job < in->n_queued);
		assert_false(started[p->for_job]);
		for (k = 0; k < i; k++)
			assert_int_not_equal(out->preempts[k].job, p->job);
	}
	for (i = 0; i < in->n_queued; i++) {
		if (started[i]) {
			assert_null(out->why[i]);
			assert_int_equal(out->position[i], 0);
		} else {
			assert_non_null(out->why[i]);
		}
	}
	free(taken);
	free(started);
}

static void render(const struct ctrl_sched_in *in,
		   const struct ctrl_sched_out *out, struct buf *starts,
		   struct buf *preempts, struct buf *pos)
{
	size_t i, k;

	for (i = 0; i < out->n_starts; i++) {
		(void)buf_addf(starts, "%sq%zu=", i ? " " : "",
			       out->starts[i].job);
		for (k = 0; k < (size_t)in->queued[out->starts[i].job].count;
		     k++)
			(void)buf_addf(starts, "%s%s", k ? "," : "",
				       in->hosts[out->starts[i].hosts[k]].name);
	}
	for (i = 0; i < out->n_preempts; i++)
		(void)buf_addf(preempts, "%sr%zu>q%zu", i ? " " : "",
			       out->preempts[i].job, out->preempts[i].for_job);
	for (i = 0; i < in->n_queued; i++)
		(void)buf_addf(pos, "%s%zu", i ? " " : "", out->position[i]);
}

static void check_why(const struct row *r, const struct ctrl_sched_out *out,
		      size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const char *want = r->why[i];

		if (!want)
			continue;
		assert_non_null(out->why[i]);
		if (want[0] == '~') {
			if (!strstr(out->why[i], want + 1))
				fail_msg("why[%zu] '%s' lacks '%s'", i,
					 out->why[i], want + 1);
		} else {
			assert_string_equal(out->why[i], want);
		}
	}
}

static void test_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct built b;
		struct ctrl_sched_out out;
		struct buf starts = BUF_INIT, preempts = BUF_INIT,
			   pos = BUF_INIT;

		print_message("%s\n", r->name);
		build(r, &b);
		ctrl_sched_decide(&b.in, &out);
		check_sane(&b.in, &out);
		render(&b.in, &out, &starts, &preempts, &pos);
		assert_string_equal(starts.data, r->starts ? r->starts : "");
		assert_string_equal(preempts.data,
				    r->preempts ? r->preempts : "");
		if (r->positions)
			assert_string_equal(pos.data, r->positions);
		check_why(r, &out, b.in.n_queued);
		ctrl_sched_out_release(&out, b.in.n_queued);
		buf_release(&starts);
		buf_release(&preempts);
		buf_release(&pos);
	}
}

/* English ordinals in the place a waiting job is given, up to the
 * 100th; further back, "past 100th". */
static void test_ordinals(void **state)
{
	static const struct {
		size_t pos;
		const char *prefix;
	} want[] = { { 1, "1st " },    { 2, "2nd " },	  { 3, "3rd " },
		     { 4, "4th " },    { 11, "11th " },	  { 12, "12th " },
		     { 13, "13th " },  { 21, "21st " },	  { 22, "22nd " },
		     { 23, "23rd " },  { 100, "100th " },
		     { 101, "past 100th in queue f;" },
		     { 112, "past 100th in queue f;" } };
	struct ctrl_sched_host host = { .name = "h1",
					.type = GPU,
					.usable = 1 };
	struct ctrl_sched_share share = { .name = "f",
					  .queue = "f",
					  .fair_group = -1 };
	static const size_t zero[] = { 0 };
	struct ctrl_sched_running run = { .type = GPU,
					  .count = 1,
					  .hosts = zero };
	struct ctrl_sched_queued q[120];
	struct ctrl_sched_in in = { .hosts = &host,
				    .n_hosts = 1,
				    .shares = &share,
				    .n_shares = 1,
				    .running = &run,
				    .n_running = 1,
				    .queued = q,
				    .n_queued = 120,
				    .now_ms = NOW };
	struct ctrl_sched_out out;
	size_t i;

	(void)state;
	for (i = 0; i < 120; i++) {
		memset(&q[i], 0, sizeof(q[i]));
		q[i].type = GPU;
		q[i].count = 1;
		q[i].seq = (int64_t)i;
	}
	ctrl_sched_decide(&in, &out);
	assert_int_equal(out.n_starts, 0);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		size_t j = want[i].pos - 1;

		assert_int_equal(out.position[j], want[i].pos);
		assert_memory_equal(out.why[j], want[i].prefix,
				    strlen(want[i].prefix));
	}
	ctrl_sched_out_release(&out, 120);
}

/* Nothing in, nothing out; missing arrays count as empty. */
static void test_empty(void **state)
{
	struct ctrl_sched_in in = { .n_hosts = 3,
				    .n_shares = 2,
				    .n_running = 4 };
	struct ctrl_sched_out out;

	(void)state;
	ctrl_sched_decide(&in, &out);
	assert_int_equal(out.n_starts, 0);
	assert_int_equal(out.n_preempts, 0);
	ctrl_sched_out_release(&out, 0);
}

/* The same input decides the same again. */
static void check_same(const struct ctrl_sched_in *in,
		       const struct ctrl_sched_out *out)
{
	struct ctrl_sched_out again;
	size_t i;

	ctrl_sched_decide(in, &again);
	assert_int_equal(again.n_starts, out->n_starts);
	assert_int_equal(again.n_preempts, out->n_preempts);
	for (i = 0; i < out->n_starts; i++) {
		assert_int_equal(again.starts[i].job, out->starts[i].job);
		assert_memory_equal(
			again.starts[i].hosts, out->starts[i].hosts,
			(size_t)in->queued[out->starts[i].job].count *
				sizeof(size_t));
	}
	for (i = 0; i < out->n_preempts; i++) {
		assert_int_equal(again.preempts[i].job, out->preempts[i].job);
		assert_int_equal(again.preempts[i].for_job,
				 out->preempts[i].for_job);
	}
	for (i = 0; i < in->n_queued; i++) {
		assert_int_equal(again.position[i], out->position[i]);
		if (out->why[i])
			assert_string_equal(again.why[i], out->why[i]);
	}
	ctrl_sched_out_release(&again, in->n_queued);
}

/* A random pick among n. */
static uint32_t rnd(uint32_t *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static int pick(uint32_t *seed, int lo, int hi)
{
	return lo + (int)(rnd(seed) % (uint32_t)(hi - lo + 1));
}

static const char *pick_str(uint32_t *seed, const char *const *v, size_t n)
{
	return v[rnd(seed) % n];
}

static const char *const types[] = { GPU, GPU, "cpu", NULL };
static const char *const racks[] = { NULL, "A", "B" };

static void random_shares(struct built *b, uint32_t *seed)
{
	size_t i;

	b->in.n_shares = (size_t)pick(seed, 0, MAX_SHARES);
	for (i = 0; i < b->in.n_shares; i++) {
		struct ctrl_sched_share *s = &b->shares[i];

		s->name = "s";
		s->queue = pick(seed, 0, 3) ? "q" : NULL;
		s->queue_priority = pick(seed, 0, 2);
		s->quota = pick(seed, 0, 1);
		b->caps[i].type = pick_str(seed, types, 4);
		b->caps[i].count = pick(seed, -1, 4);
		s->caps = pick(seed, 0, 3) ? &b->caps[i] : NULL;
		s->n_caps = (size_t)pick(seed, 0, 1);
		s->sharing = (enum ctrl_sched_sharing)pick(seed, 0, 2);
		s->borrow_limit_pct = pick(seed, -1, 150);
		s->in_share_preemption = pick(seed, 0, 1);
		s->fair_group = pick(seed, -1, 1);
		s->weight = pick(seed, -1, 3) / 2.0;
		s->usage = pick(seed, 0, 100);
		s->compute_reservation = pick(seed, -5, 120);
	}
}

static void random_jobs(struct built *b, uint32_t *seed, size_t held[][4])
{
	size_t i, k;

	b->in.n_running = (size_t)pick(seed, 0, MAX_RUN);
	for (i = 0; i < b->in.n_running; i++) {
		struct ctrl_sched_running *r = &b->running[i];

		r->share = (size_t)pick(seed, 0, MAX_SHARES + 1);
		r->type = pick_str(seed, types, 4);
		r->count = pick(seed, -1, 3);
		for (k = 0; k < 4; k++)
			held[i][k] = (size_t)pick(seed, 0, MAX_HOSTS);
		r->hosts = held[i];
		r->priority = pick(seed, 0, 3);
		r->started_ms = pick(seed, 0, 2000);
		r->ends_ms = pick(seed, 0, 1) ? pick(seed, 0, 4000) : 0;
		r->releasing = pick(seed, 0, 4) == 0;
	}
	b->in.n_queued = (size_t)pick(seed, 0, MAX_Q);
	for (i = 0; i < b->in.n_queued; i++) {
		struct ctrl_sched_queued *q = &b->queued[i];

		q->share = (size_t)pick(seed, 0, MAX_SHARES + 1);
		q->type = pick_str(seed, types, 4);
		q->count = pick(seed, -1, 5);
		q->priority = pick(seed, 0, 3);
		q->seq = pick(seed, 0, 5);
		q->max_runtime_s = pick(seed, -1, 3);
	}
}

/*
 * Random small pools, bad input included (indices out of range, counts
 * <= 0, missing types and caps, odd weights and percentages): the
 * decision never crashes and what holds for every decision holds.
 */
static void test_random(void **state)
{
	uint32_t seed = 35;
	int round;

	(void)state;
	for (round = 0; round < 3000; round++) {
		struct built b;
		struct ctrl_sched_out out;
		size_t held[MAX_RUN][4], i;

		memset(&b, 0, sizeof(b));
		b.in.n_hosts = (size_t)pick(&seed, 0, MAX_HOSTS);
		for (i = 0; i < b.in.n_hosts; i++) {
			b.hosts[i].name = "h";
			b.hosts[i].type = pick_str(&seed, types, 4);
			b.hosts[i].domain = pick_str(&seed, racks, 3);
			b.hosts[i].usable = pick(&seed, 0, 5) != 0;
			b.hosts[i].held = pick(&seed, 0, 5) == 0;
		}
		random_shares(&b, &seed);
		random_jobs(&b, &seed, held);
		b.in.hosts = b.hosts;
		b.in.shares = b.shares;
		b.in.running = b.running;
		b.in.queued = b.queued;
		b.in.now_ms = 2000;
		b.in.min_run_ms = pick(&seed, 0, 1) ? 500 : 0;
		b.in.start_charge_s = pick(&seed, 0, 2);
		ctrl_sched_decide(&b.in, &out);
		check_sane(&b.in, &out);
		check_same(&b.in, &out);
		ctrl_sched_out_release(&out, b.in.n_queued);
	}
}

/*
 * One decision at the benchmark's scale: 5,000 hosts of two types in 50
 * racks, 3,000 of them busy, 20,000 queued jobs of 1-4 hosts in 50 shares
 * (quota shares of each kind, fair-share identifiers in two policies,
 * FIFO queues). The time is printed as a TAP comment; bench/ holds the
 * goal.
 */
#define BH 5000
#define BQ 20000
#define BS 50

struct scale {
	struct ctrl_sched_host hosts[BH];
	struct ctrl_sched_share shares[BS];
	struct ctrl_sched_cap caps[BS][2];
	struct ctrl_sched_running running[BH];
	size_t held[BH];
	struct ctrl_sched_queued queued[BQ];
	char racks[50][8], queues[10][8], names[BS][8];
	struct ctrl_sched_in in;
};

static void scale_shares(struct scale *x, uint32_t *seed)
{
	static const enum ctrl_sched_sharing kinds[] = {
		CTRL_SCHED_RESERVE, CTRL_SCHED_LEND, CTRL_SCHED_LEND_AND_BORROW
	};
	size_t i;

	for (i = 0; i < 10; i++)
		snprintf(x->queues[i], sizeof(x->queues[i]), "q%zu", i);
	for (i = 0; i < BS; i++) {
		struct ctrl_sched_share *s = &x->shares[i];

		snprintf(x->names[i], sizeof(x->names[i]), "s%zu", i);
		s->name = x->names[i];
		s->queue = x->queues[i / 5];
		s->queue_priority = (int)(i / 5 % 3);
		s->fair_group = -1;
		if (i < 20) {
			x->caps[i][0].type = GPU;
			x->caps[i][0].count = 100;
			x->caps[i][1].type = "cpu";
			x->caps[i][1].count = 25;
			s->quota = 1;
			s->caps = x->caps[i];
			s->n_caps = 2;
			s->sharing = kinds[i % 3];
			s->borrow_limit_pct = i % 2 ? 50 : -1;
			s->in_share_preemption = i % 4 == 0;
		} else if (i < 40) {
			s->fair_group = (int)(i % 2);
			s->weight = 0.5 + (double)(i % 4) / 2;
			s->usage = (double)(rnd(seed) % 100000);
			s->compute_reservation = i % 2 ? 10 : 0;
		}
	}
}

static void scale_running(struct scale *x, uint32_t *seed)
{
	size_t n = 0, h = 0;

	while (h < 3000) {
		struct ctrl_sched_running *r = &x->running[n];
		size_t k, c = 1 + rnd(seed) % 4;
		size_t base = h < 2400 ? h : 4000 + (h - 2400);

		r->id = (int64_t)n;
		r->share = rnd(seed) % BS;
		r->type = base < 4000 ? GPU : "cpu";
		r->count = (int)c;
		for (k = 0; k < c; k++)
			x->held[h + k] = base + k;
		r->hosts = &x->held[h];
		r->priority = (int)(rnd(seed) % 4);
		r->started_ms = NOW - (int64_t)(rnd(seed) % 7200000);
		r->ends_ms = rnd(seed) % 3 ? NOW + rnd(seed) % 7200000 : 0;
		r->releasing = rnd(seed) % 20 == 0;
		h += c;
		n++;
	}
	x->in.running = x->running;
	x->in.n_running = n;
}

static void scale_build(struct scale *x)
{
	uint32_t seed = 35;
	size_t i;

	memset(x, 0, sizeof(*x));
	for (i = 0; i < 50; i++)
		snprintf(x->racks[i], sizeof(x->racks[i]), "r%zu", i);
	for (i = 0; i < BH; i++) {
		x->hosts[i].type = i < 4000 ? GPU : "cpu";
		x->hosts[i].domain = x->racks[i / 100];
		x->hosts[i].usable = i % 97 != 0;
	}
	scale_shares(x, &seed);
	scale_running(x, &seed);
	for (i = 0; i < BQ; i++) {
		struct ctrl_sched_queued *q = &x->queued[i];

		q->id = (int64_t)i;
		q->share = rnd(&seed) % BS;
		q->type = rnd(&seed) % 5 ? GPU : "cpu";
		q->count = 1 + (int)(rnd(&seed) % 4);
		q->priority = (int)(rnd(&seed) % 4);
		q->seq = (int64_t)i;
		q->max_runtime_s = rnd(&seed) % 2 ? rnd(&seed) % 7200 : 0;
	}
	x->in.hosts = x->hosts;
	x->in.n_hosts = BH;
	x->in.shares = x->shares;
	x->in.n_shares = BS;
	x->in.queued = x->queued;
	x->in.n_queued = BQ;
	x->in.now_ms = NOW + 7200000;
	x->in.min_run_ms = 600000;
	x->in.start_charge_s = 60;
}

static double ms_since(clockid_t clock, const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(clock, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 +
	       (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void test_scale(void **state)
{
	struct scale *x = malloc(sizeof(*x));
	struct ctrl_sched_out out;
	double ms[5], cpu[5];
	size_t i, starts = 0, preempts = 0;

	(void)state;
	assert_non_null(x);
	scale_build(x);
	for (i = 0; i < 5; i++) {
		struct timespec t0, c0;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
		ctrl_sched_decide(&x->in, &out);
		cpu[i] = ms_since(CLOCK_THREAD_CPUTIME_ID, &c0);
		ms[i] = ms_since(CLOCK_MONOTONIC, &t0);
		if (!i)
			check_sane(&x->in, &out);
		starts = out.n_starts;
		preempts = out.n_preempts;
		ctrl_sched_out_release(&out, BQ);
	}
	qsort(ms, 5, sizeof(ms[0]), cmp_double);
	qsort(cpu, 5, sizeof(cpu[0]), cmp_double);
	assert_true(starts > 0);
	print_message("# ctrl_sched_decide: %d hosts, %zu running, %d queued, "
		      "%d shares: %zu starts, %zu preemptions; of 5 runs, "
		      "median %.2f ms CPU (max %.2f), %.2f ms wall (max "
		      "%.2f)\n",
		      BH, x->in.n_running, BQ, BS, starts, preempts, cpu[2],
		      cpu[4], ms[2], ms[4]);
	free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table), cmocka_unit_test(test_ordinals),
		cmocka_unit_test(test_empty), cmocka_unit_test(test_random),
		cmocka_unit_test(test_scale),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
