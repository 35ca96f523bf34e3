/*
 * The replication engine (ha/ha.h): libraft with its libuv I/O in a
 * thread of its own. Raft calls (raft_apply, raft_barrier) are made on
 * that thread only; the store's writer hands its changes over through one
 * slot guarded by a mutex and a uv_async wake-up. Consensus is libraft's:
 * here are the state machine (the store), the leader's readiness and the
 * fail-stop when leadership is lost.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "ha/ha.h"
#include "ha/internal.h"
#include "db/db.h"
#include "db/replica.h"
#include "common/err.h"
#include "common/xalloc.h"
#define LOG_TAG "ha"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/banned.h"

/*
 * An entry: magic, member, incarnation, sequence number, the changeset's
 * length, then the changeset, padded with zeros to a multiple of 8 bytes
 * (libraft's log needs that of every entry and snapshot).
 */
#define ENTRY_MAGIC 0x41484354u /* "TCHA" */
#define ENTRY_HDR 32
/* A snapshot: magic, 0, the index it was taken at, the image's length,
 * then the image, padded. */
#define SNAP_MAGIC 0x53484354u /* "TCHS" */
#define SNAP_HDR 24

#define PAD8(n) (((n) + 7) & ~(size_t)7)

#define TICK_MS 20

/* The writer's one proposal in flight (ha->slot). */
enum slot_state {
	SLOT_IDLE,
	SLOT_QUEUED,	   /* handed over, raft_apply not called yet */
	SLOT_IN_RAFT,	   /* appended, not applied yet */
	SLOT_APPLIED,	   /* committed: the writer commits locally */
	SLOT_COMMITTED,	   /* the writer committed */
	SLOT_LOCAL_FAILED, /* the writer could not commit */
	SLOT_FAILED,	   /* never committed here: the write fails */
};

enum role {
	ROLE_FOLLOWER,
	ROLE_BARRIER, /* elected, applying what is committed */
	ROLE_READY,   /* leads: the controller may write */
	ROLE_LOST,    /* led, and another leader's entry arrived */
	ROLE_DEPOSED, /* fail-stopped without re-executing: refuses writes */
};

/*
 * A request made on raft's thread for another thread: ha->status_call
 * (a look at the members) and ha->change_call (a membership change, which
 * may take a while: the members are looked at meanwhile).
 */
enum call_kind {
	CALL_STATUS,
	CALL_ADD,
	CALL_REMOVE,
};

enum call_state {
	CALL_IDLE,
	CALL_QUEUED,  /* waiting for raft's thread */
	CALL_RUNNING, /* a change raft has not committed yet */
	CALL_DONE,    /* rv holds the outcome */
};

struct ha_call {
	enum call_kind kind;
	enum call_state state;
	unsigned id;
	char addr[128];
	int rv; /* raft's code: 0 or RAFT_* */
	struct ha_status *status;
	struct raft_change add, assign;
};

struct ha {
	const struct ha_config *cfg;
	struct db *db;
	struct raft raft;
	struct raft_io io;
	struct raft_uv_transport transport;
	struct raft_fsm fsm;
	struct raft_apply apply;
	struct raft_barrier barrier;
	uv_loop_t loop;
	uv_async_t wake;
	uv_timer_t tick;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* Under lock: */
	int started; /* 1 running, -1 failed to start */
	char start_err[256];
	int stopping;
	int closing; /* loop thread only */
	enum role role;
	unsigned leader_id;
	enum slot_state slot;
	uint64_t slot_seq;
	uint64_t slot_index;
	void *slot_entry; /* raft_malloc'd, raft's once applied */
	size_t slot_len;
	char slot_why[160];
	uint64_t incarnation;
	uint64_t next_seq;
	int setup; /* how far raft_setup() got (enum setup_stage) */
	/* Monotonic ms of the last tick of raft's loop: a leader whose loop
	 * did not run for an election timeout (the process was frozen, a
	 * SIGSTOP) may have been replaced meanwhile. Atomic. */
	int64_t tick_ms;
	/* The read lease (ha/lease.c), from the leadership barrier
	 * proposed at barrier_start (monotonic ms; loop thread). */
	struct ha_lease lease;
	int64_t barrier_start;
	/* raft's term in which this member leads and serves; 0 before.
	 * Written on raft's thread, read by the controller's. Atomic. */
	uint64_t term;
	/* Under lock: the request for raft's thread, and the members'
	 * URLs the store holds (ha_members_set()). */
	struct ha_call status_call, change_call;
	struct ha_member *urls;
	size_t n_urls;
	/* raft's configuration index as the loop last saw it. Atomic. */
	uint64_t conf_version;
};

enum setup_stage {
	SETUP_NONE,
	SETUP_LOOP,
	SETUP_TRANSPORT,
	SETUP_IO,
	SETUP_RAFT,
};

static void put_u32(unsigned char *p, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
	uint32_t v = 0;
	int i;

	for (i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t get_u64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* Every descriptor but 0, 1 and 2 closed on exec (the listeners too). */
static void cloexec_all(void)
{
	long max;
	int fd;

	if (!syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC))
		return;
	/* A kernel before 5.11. */
	max = sysconf(_SC_OPEN_MAX);
	if (max < 0 || max > 1 << 20)
		max = 1 << 20;
	for (fd = 3; fd < max; fd++)
		(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
}

/*
 * Leadership lost, or the store no longer where the log is: nothing in
 * this process may act any more. Every descriptor is closed on exec and
 * the program starts again, as a follower that catches up from the log.
 */
static void fail_stop(struct ha *ha, const char *why)
{
	if (!ha->cfg->argv) {
		/* No program to run again (a test): refuse every write
		 * from now on. */
		pthread_mutex_lock(&ha->lock);
		if (ha->role != ROLE_DEPOSED)
			log_error("%s: this member stops writing", why);
		__atomic_store_n(&ha->role, ROLE_DEPOSED, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&ha->lock);
		return;
	}
	log_error("%s: re-executing as a follower", why);
	cloexec_all();
	execv("/proc/self/exe", ha->cfg->argv);
	log_error("cannot re-execute: %s", strerror(errno));
	_exit(1);
}

/* Wakes the writer waiting on the slot with a failure. */
static void slot_fail(struct ha *ha, const char *why)
{
	if (ha->slot == SLOT_QUEUED) {
		raft_free(ha->slot_entry);
		ha->slot_entry = NULL;
	}
	snprintf(ha->slot_why, sizeof(ha->slot_why), "%s", why);
	ha->slot = SLOT_FAILED;
	pthread_cond_broadcast(&ha->cond);
}

/* db_replica_hook.propose, on the writer's thread. */
static int propose(void *arg, const void *changes, size_t len, uint64_t *index,
		   struct buf *err)
{
	struct ha *ha = arg;
	size_t size = PAD8(ENTRY_HDR + len);
	unsigned char *entry = raft_malloc(size);
	int ret = 0;

	if (!entry) {
		(void)buf_addf(err, "out of memory for a log entry");
		return ERR_NOMEM;
	}
	pthread_mutex_lock(&ha->lock);
	while (ha->slot != SLOT_IDLE && !ha->stopping)
		pthread_cond_wait(&ha->cond, &ha->lock);
	if (ha->role != ROLE_READY || ha->stopping) {
		pthread_mutex_unlock(&ha->lock);
		raft_free(entry);
		(void)buf_addf(err, "not the leader");
		return ERR_DB;
	}
	put_u32(entry, ENTRY_MAGIC);
	put_u32(entry + 4, ha->cfg->self);
	put_u64(entry + 8, ha->incarnation);
	put_u64(entry + 16, ++ha->next_seq);
	put_u64(entry + 24, len);
	memcpy(entry + ENTRY_HDR, changes, len);
	memset(entry + ENTRY_HDR + len, 0, size - ENTRY_HDR - len);
	ha->slot_seq = ha->next_seq;
	ha->slot_entry = entry;
	ha->slot_len = size;
	ha->slot = SLOT_QUEUED;
	uv_async_send(&ha->wake);
	while (ha->slot == SLOT_QUEUED || ha->slot == SLOT_IN_RAFT)
		pthread_cond_wait(&ha->cond, &ha->lock);
	if (ha->slot == SLOT_APPLIED) {
		*index = ha->slot_index;
	} else {
		(void)buf_addf(err, "%s", ha->slot_why);
		ha->slot = SLOT_IDLE;
		pthread_cond_broadcast(&ha->cond);
		ret = ERR_DB;
	}
	pthread_mutex_unlock(&ha->lock);
	return ret;
}

/* db_replica_hook.applied: the writer's local COMMIT of the entry. */
static void applied(void *arg, uint64_t index, int ok)
{
	struct ha *ha = arg;

	(void)index;
	pthread_mutex_lock(&ha->lock);
	ha->slot = ok ? SLOT_COMMITTED : SLOT_LOCAL_FAILED;
	pthread_cond_broadcast(&ha->cond);
	pthread_mutex_unlock(&ha->lock);
}

static void on_apply_done(struct raft_apply *req, int status, void *result)
{
	struct ha *ha = req->data;

	(void)result;
	if (!status)
		return;
	pthread_mutex_lock(&ha->lock);
	if (ha->slot == SLOT_IN_RAFT)
		slot_fail(ha, status == RAFT_LEADERSHIPLOST ?
				      "lost leadership" :
				      raft_strerror(status));
	pthread_mutex_unlock(&ha->lock);
}

/* Hands the queued proposal to raft (loop thread). */
static void submit(struct ha *ha)
{
	struct raft_buffer b;
	int rv;

	pthread_mutex_lock(&ha->lock);
	if (ha->slot != SLOT_QUEUED) {
		pthread_mutex_unlock(&ha->lock);
		return;
	}
	if (ha->role != ROLE_READY || raft_state(&ha->raft) != RAFT_LEADER) {
		slot_fail(ha, "not the leader");
		pthread_mutex_unlock(&ha->lock);
		return;
	}
	b.base = ha->slot_entry;
	b.len = ha->slot_len;
	ha->slot = SLOT_IN_RAFT;
	pthread_mutex_unlock(&ha->lock);
	ha->apply.data = ha;
	rv = raft_apply(&ha->raft, &ha->apply, &b, 1, on_apply_done);
	if (rv) {
		pthread_mutex_lock(&ha->lock);
		ha->slot = SLOT_QUEUED; /* the entry is still ours to free */
		slot_fail(ha, raft_strerror(rv));
		pthread_mutex_unlock(&ha->lock);
	}
}

/*
 * This member's own pending entry: the writer commits it locally, and
 * nothing else is applied until it has (a snapshot taken after this
 * entry then sees it in the store).
 */
static void apply_own(struct ha *ha, uint64_t index)
{
	int ok;

	ha->slot_index = index;
	ha->slot_entry = NULL; /* raft's now */
	ha->slot = SLOT_APPLIED;
	pthread_cond_broadcast(&ha->cond);
	while (ha->slot == SLOT_APPLIED)
		pthread_cond_wait(&ha->cond, &ha->lock);
	ok = ha->slot == SLOT_COMMITTED;
	ha->slot = SLOT_IDLE;
	pthread_cond_broadcast(&ha->cond);
	pthread_mutex_unlock(&ha->lock);
	if (!ok)
		fail_stop(ha, "the store could not commit a replicated entry");
}

static int fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf,
		     void **result)
{
	struct ha *ha = fsm->data;
	const unsigned char *p = buf->base;
	uint64_t index = raft_last_applied(&ha->raft) + 1;
	struct buf err = BUF_INIT;
	uint64_t len;

	*result = NULL;
	len = buf->len >= ENTRY_HDR ? get_u64(p + 24) : 0;
	if (buf->len < ENTRY_HDR || get_u32(p) != ENTRY_MAGIC ||
	    len > buf->len - ENTRY_HDR) {
		log_error("entry %llu is not a store change (%zu bytes)",
			  (unsigned long long)index, buf->len);
		_exit(3);
	}
	pthread_mutex_lock(&ha->lock);
	if (get_u32(p + 4) == ha->cfg->self &&
	    get_u64(p + 8) == ha->incarnation &&
	    get_u64(p + 16) == ha->slot_seq && ha->slot == SLOT_IN_RAFT) {
		apply_own(ha, index); /* unlocks */
		return 0;
	}
	/*
	 * Another leader's entry. A writer of this member waiting for its
	 * own entry holds the store's write lock: fail it first, and no
	 * proposal is taken any more (the tick fail-stops this member).
	 */
	if (ha->role == ROLE_READY)
		__atomic_store_n(&ha->role, ROLE_LOST, __ATOMIC_RELEASE);
	if (ha->slot == SLOT_QUEUED || ha->slot == SLOT_IN_RAFT)
		slot_fail(ha, "lost leadership");
	pthread_mutex_unlock(&ha->lock);
	if (db_replica_apply(ha->db, index, p + ENTRY_HDR, (size_t)len, &err)) {
		log_error("entry %llu: %s", (unsigned long long)index,
			  err.data);
		_exit(3);
	}
	buf_release(&err);
	return 0;
}

static int fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[],
			unsigned *n_bufs)
{
	struct ha *ha = fsm->data;
	struct buf err = BUF_INIT;
	void *img = NULL;
	size_t len = 0;
	struct raft_buffer *b;
	unsigned char *data;

	if (db_replica_snapshot(ha->db, &img, &len, &err)) {
		log_error("snapshot: %s", err.data);
		buf_release(&err);
		return RAFT_BUSY; /* tried again later */
	}
	b = raft_malloc(sizeof(*b));
	data = raft_malloc(PAD8(SNAP_HDR + len));
	if (!b || !data) {
		raft_free(b);
		raft_free(data);
		free(img);
		return RAFT_NOMEM;
	}
	put_u32(data, SNAP_MAGIC);
	put_u32(data + 4, 0);
	put_u64(data + 8, raft_last_applied(&ha->raft));
	put_u64(data + 16, len);
	memcpy(data + SNAP_HDR, img, len);
	memset(data + SNAP_HDR + len, 0, PAD8(SNAP_HDR + len) - SNAP_HDR - len);
	free(img);
	b->base = data;
	b->len = PAD8(SNAP_HDR + len);
	*bufs = b;
	*n_bufs = 1;
	log_info("snapshot at entry %llu (%zu bytes)",
		 (unsigned long long)raft_last_applied(&ha->raft), len);
	return 0;
}

static int fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	struct ha *ha = fsm->data;
	const unsigned char *p = buf->base;
	struct buf err = BUF_INIT;
	uint64_t index;
	uint64_t len;

	if (buf->len < SNAP_HDR || get_u32(p) != SNAP_MAGIC ||
	    get_u64(p + 16) > buf->len - SNAP_HDR) {
		log_error("a snapshot that is not a store image");
		return RAFT_MALFORMED;
	}
	index = get_u64(p + 8);
	len = get_u64(p + 16);
	/* After a restart: the store holds it (and maybe more) already. */
	if (index <= db_replica_applied(ha->db)) {
		raft_free(buf->base);
		return 0;
	}
	if (db_replica_restore(ha->db, index, p + SNAP_HDR, (size_t)len,
			       &err)) {
		log_error("restore of the snapshot at entry %llu: %s",
			  (unsigned long long)index, err.data);
		buf_release(&err);
		return RAFT_IOERR;
	}
	log_info("store restored from the snapshot at entry %llu",
		 (unsigned long long)index);
	raft_free(buf->base);
	return 0;
}

static void on_barrier(struct raft_barrier *req, int status)
{
	struct ha *ha = req->data;

	pthread_mutex_lock(&ha->lock);
	if (status || ha->role != ROLE_BARRIER) {
		if (ha->role == ROLE_BARRIER)
			__atomic_store_n(&ha->role, ROLE_FOLLOWER,
					 __ATOMIC_RELEASE);
	} else {
		ha__lease_lead(&ha->lease, ha->cfg->election_ms,
			       ha->barrier_start);
		__atomic_store_n(&ha->term, ha->raft.current_term,
				 __ATOMIC_RELEASE);
		__atomic_store_n(&ha->role, ROLE_READY, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&ha->cond);
		log_info("member %u leads at entry %llu in term %llu",
			 ha->cfg->self,
			 (unsigned long long)raft_last_applied(&ha->raft),
			 (unsigned long long)ha->raft.current_term);
	}
	pthread_mutex_unlock(&ha->lock);
}

/* Follows raft's state: elected, deposed, who leads. */
static void on_tick(uv_timer_t *t)
{
	struct ha *ha = t->data;
	int state = raft_state(&ha->raft);
	raft_id id = 0;
	const char *addr = NULL;
	enum role role;

	int64_t now = time_mono_ms();
	int64_t gap = now - __atomic_load_n(&ha->tick_ms, __ATOMIC_ACQUIRE);

	raft_leader(&ha->raft, &id, &addr);
	__atomic_store_n(&ha->conf_version,
			 ha->raft.configuration_index +
				 ha->raft.configuration_uncommitted_index,
			 __ATOMIC_RELEASE);
	pthread_mutex_lock(&ha->lock);
	ha->leader_id = (unsigned)id;
	role = ha->role;
	__atomic_store_n(&ha->tick_ms, now, __ATOMIC_RELEASE);
	if (role == ROLE_READY && gap > (int64_t)ha->cfg->election_ms) {
		/* The others may have elected a leader while this one did not
		 * run: what it would read or do now may be stale. */
		pthread_mutex_unlock(&ha->lock);
		log_warn("raft's loop did not run for %lld ms (more than the "
			 "election timeout)",
			 (long long)gap);
		fail_stop(ha, "this member may no longer lead");
		return;
	}
	if (role == ROLE_DEPOSED) {
		pthread_mutex_unlock(&ha->lock);
		return;
	}
	if (role == ROLE_FOLLOWER && state == RAFT_LEADER)
		__atomic_store_n(&ha->role, ROLE_BARRIER, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ha->lock);
	if ((role == ROLE_READY || role == ROLE_LOST) && state != RAFT_LEADER)
		fail_stop(ha, "lost leadership");
	if (role == ROLE_LOST)
		fail_stop(ha, "another member leads");
	if (role == ROLE_READY && state == RAFT_LEADER)
		ha__lease_renew(&ha->lease, &ha->raft, now);
	if (role != ROLE_FOLLOWER || state != RAFT_LEADER)
		return;
	/* Elected: once every committed entry is applied, lead. */
	ha->barrier.data = ha;
	ha->barrier_start = now;
	if (raft_barrier(&ha->raft, &ha->barrier, on_barrier)) {
		pthread_mutex_lock(&ha->lock);
		__atomic_store_n(&ha->role, ROLE_FOLLOWER, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&ha->lock);
	}
}

/* Ends call c with raft's code rv, waking its caller. */
static void call_finish(struct ha *ha, struct ha_call *c, int rv)
{
	pthread_mutex_lock(&ha->lock);
	c->rv = rv;
	c->state = CALL_DONE;
	pthread_cond_broadcast(&ha->cond);
	pthread_mutex_unlock(&ha->lock);
}

static void on_changed(struct raft_change *req, int status)
{
	struct ha *ha = req->data;

	call_finish(ha, &ha->change_call, status);
}

/* Makes the change call's member a voter once it caught up. */
static int promote(struct ha *ha)
{
	ha->change_call.assign.data = ha;
	return raft_assign(&ha->raft, &ha->change_call.assign,
			   ha->change_call.id, RAFT_VOTER, on_changed);
}

/* The new member is a spare: make it a voter once it caught up. */
static void on_added(struct raft_change *req, int status)
{
	struct ha *ha = req->data;
	int rv = status ? status : promote(ha);

	if (rv)
		call_finish(ha, &ha->change_call, rv);
}

/*
 * Adds the change call's member: a new one as a spare, then a voter; one
 * there already as a spare or standby at the same address (an earlier
 * add that it did not answer) is made a voter.
 */
static int add_member(struct ha *ha)
{
	struct ha_call *c = &ha->change_call;
	const struct raft_server *s = NULL;
	unsigned i;

	for (i = 0; i < ha->raft.configuration.n; i++)
		if (ha->raft.configuration.servers[i].id == c->id)
			s = &ha->raft.configuration.servers[i];
	if (s && (s->role == RAFT_VOTER || strcmp(s->address, c->addr)))
		return RAFT_DUPLICATEID;
	if (s)
		return promote(ha);
	if (ha->raft.configuration.n >= HA_MAX_MEMBERS)
		return RAFT_TOOMANY;
	c->add.data = ha;
	return raft_add(&ha->raft, &c->add, c->id, c->addr, on_added);
}

/* The leader's view of its members (raft's thread). */
static int fill_status(struct ha *ha, struct ha_status *st)
{
	struct raft *r = &ha->raft;
	raft_index last = raft_last_index(r);
	unsigned i;

	if (raft_state(r) != RAFT_LEADER)
		return RAFT_NOTLEADER;
	memset(st, 0, sizeof(*st));
	st->term = r->current_term;
	st->last_index = last;
	st->leader_id = (unsigned)r->id;
	for (i = 0; i < r->configuration.n && st->n < HA_MAX_MEMBERS; i++) {
		const struct raft_server *srv = &r->configuration.servers[i];
		const struct raft_progress *p = &r->leader_state.progress[i];
		struct ha_member_status *m = &st->members[st->n++];
		raft_index match = srv->id == r->id ? last : p->match_index;

		m->id = (unsigned)srv->id;
		snprintf(m->raft_addr, sizeof(m->raft_addr), "%s",
			 srv->address);
		m->role = ha__role(srv->role, srv->id == r->id);
		m->reachable = srv->id == r->id || p->recent_recv;
		m->lag = last > match ? last - match : 0;
	}
	return 0;
}

/* Starts call c if it is queued (raft's thread). */
static void run_call(struct ha *ha, struct ha_call *c)
{
	int rv = 0;

	pthread_mutex_lock(&ha->lock);
	if (c->state != CALL_QUEUED) {
		pthread_mutex_unlock(&ha->lock);
		return;
	}
	c->state = CALL_RUNNING;
	pthread_mutex_unlock(&ha->lock);
	switch (c->kind) {
	case CALL_STATUS:
		rv = fill_status(ha, c->status);
		call_finish(ha, c, rv);
		return;
	case CALL_ADD:
		rv = add_member(ha);
		break;
	case CALL_REMOVE:
		c->add.data = ha;
		rv = raft_remove(&ha->raft, &c->add, c->id, on_changed);
		break;
	}
	if (rv)
		call_finish(ha, c, rv);
}

/* A queued call fails: raft's thread is closing. */
static void call_cancel(struct ha *ha, struct ha_call *c)
{
	if (c->state != CALL_QUEUED)
		return;
	c->rv = RAFT_SHUTDOWN;
	c->state = CALL_DONE;
	pthread_cond_broadcast(&ha->cond);
}

static void on_raft_closed(struct raft *r)
{
	struct ha *ha = r->data;

	raft_uv_close(&ha->io);
	raft_uv_tcp_close(&ha->transport);
}

static void on_wake(uv_async_t *h)
{
	struct ha *ha = h->data;
	int stopping;

	pthread_mutex_lock(&ha->lock);
	stopping = ha->stopping;
	if (stopping && (ha->slot == SLOT_QUEUED || ha->slot == SLOT_IN_RAFT))
		slot_fail(ha, "shutting down");
	if (stopping) {
		call_cancel(ha, &ha->status_call);
		call_cancel(ha, &ha->change_call);
	}
	pthread_mutex_unlock(&ha->lock);
	if (!stopping) {
		submit(ha);
		run_call(ha, &ha->status_call);
		run_call(ha, &ha->change_call);
		return;
	}
	if (ha->closing)
		return;
	ha->closing = 1;
	uv_timer_stop(&ha->tick);
	uv_close((uv_handle_t *)&ha->tick, NULL);
	uv_close((uv_handle_t *)&ha->wake, NULL);
	raft_close(&ha->raft, on_raft_closed);
}

/* Whether raft has stored nothing in dir yet (no metadata file). */
static int raft_dir_new(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int fresh = 1;

	if (!d)
		return 1;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "metadata", 8))
			fresh = 0;
	closedir(d);
	return fresh;
}

/*
 * A new raft folder, but a store that holds entries: this member lost its
 * raft folder and must join as a new member. Or a store of a single
 * controller: the other members do not have what it holds (docs/ha.md).
 * Checked before raft writes anything there.
 */
static int check_new_member(const struct ha_config *cfg, struct db *db,
			    struct buf *err)
{
	int rows = 0;

	if (!raft_dir_new(cfg->dir))
		return 0;
	if (db_replica_applied(db) > 0) {
		(void)buf_addf(err,
			       "%s is new but the store holds replicated "
			       "entries: replace this member with a new one",
			       cfg->dir);
		return ERR_INVALID;
	}
	if (db_replica_holds_rows(db, &rows, err))
		return ERR_IO;
	if (rows) {
		(void)buf_addf(err,
			       "%s is new but the store holds data: a member "
			       "starts from an empty state dir",
			       cfg->dir);
		return ERR_INVALID;
	}
	return 0;
}

/* The members as raft's first configuration: all voters. */
static int bootstrap(struct ha *ha, struct buf *err)
{
	struct raft_configuration conf;
	size_t i;
	int rv = 0;

	if (ha->cfg->join)
		return 0; /* the leader's configuration comes with the log */
	raft_configuration_init(&conf);
	for (i = 0; i < ha->cfg->n_members && !rv; i++)
		rv = raft_configuration_add(&conf, ha->cfg->members[i].id,
					    ha->cfg->members[i].raft_addr,
					    RAFT_VOTER);
	if (!rv)
		rv = raft_bootstrap(&ha->raft, &conf);
	raft_configuration_close(&conf);
	if (rv == RAFT_CANTBOOTSTRAP)
		return 0; /* a restart: the log has it */
	if (rv) {
		(void)buf_addf(err, "cannot bootstrap raft: %s",
			       raft_strerror(rv));
		return ERR_IO;
	}
	return 0;
}

/* The loop, raft's libuv I/O in cfg->dir, and raft itself (not started). */
static int raft_open(struct ha *ha, struct buf *err)
{
	const struct ha_member *me = ha_config_member(ha->cfg, ha->cfg->self);
	int rv;

	rv = uv_loop_init(&ha->loop);
	if (!rv) {
		ha->setup = SETUP_LOOP;
		rv = raft_uv_tcp_init(&ha->transport, &ha->loop);
	}
	if (!rv) {
		ha->setup = SETUP_TRANSPORT;
		rv = raft_uv_init(&ha->io, &ha->loop, ha->cfg->dir,
				  &ha->transport);
	}
	if (!rv)
		ha->setup = SETUP_IO;
	if (rv) {
		(void)buf_addf(err, "cannot set up raft's I/O in %s (%d)",
			       ha->cfg->dir, rv);
		return ERR_IO;
	}
	ha->fsm.version = 1;
	ha->fsm.data = ha;
	ha->fsm.apply = fsm_apply;
	ha->fsm.snapshot = fsm_snapshot;
	ha->fsm.restore = fsm_restore;
	rv = raft_init(&ha->raft, &ha->io, &ha->fsm, me->id, me->raft_addr);
	if (rv) {
		(void)buf_addf(err, "cannot set up raft: %s",
			       raft_strerror(rv));
		return ERR_IO;
	}
	ha->raft.data = ha;
	ha->setup = SETUP_RAFT;
	return 0;
}

static int raft_setup(struct ha *ha, struct buf *err)
{
	int rv;

	if (raft_open(ha, err) || bootstrap(ha, err))
		return ERR_IO;
	raft_set_election_timeout(&ha->raft, ha->cfg->election_ms);
	raft_set_heartbeat_timeout(&ha->raft, ha->cfg->heartbeat_ms);
	raft_set_snapshot_threshold(&ha->raft, ha->cfg->snapshot_entries);
	raft_set_snapshot_trailing(&ha->raft, ha->cfg->snapshot_entries / 2);
	raft_set_pre_vote(&ha->raft, true);
	/*
	 * A follower busy writing its own snapshot refuses the leader's,
	 * which sends it again only after this long (libraft's default is
	 * 30 s): ten elections.
	 */
	raft_set_install_snapshot_timeout(&ha->raft, 10 * ha->cfg->election_ms);
	rv = raft_start(&ha->raft);
	if (rv) {
		(void)buf_addf(err, "cannot start raft: %s (%s)",
			       raft_strerror(rv), raft_errmsg(&ha->raft));
		return ERR_IO;
	}
	ha->wake.data = ha;
	ha->tick.data = ha;
	uv_async_init(&ha->loop, &ha->wake, on_wake);
	uv_timer_init(&ha->loop, &ha->tick);
	uv_timer_start(&ha->tick, on_tick, TICK_MS, TICK_MS);
	return 0;
}

/* Undoes what raft_setup() did before it failed. */
static void setup_undo(struct ha *ha)
{
	if (ha->setup >= SETUP_RAFT) {
		raft_close(&ha->raft, on_raft_closed);
	} else {
		if (ha->setup >= SETUP_IO)
			raft_uv_close(&ha->io);
		if (ha->setup >= SETUP_TRANSPORT)
			raft_uv_tcp_close(&ha->transport);
	}
	if (ha->setup >= SETUP_LOOP) {
		uv_run(&ha->loop, UV_RUN_DEFAULT);
		uv_loop_close(&ha->loop);
	}
}

static void *ha_main(void *arg)
{
	struct ha *ha = arg;
	struct buf err = BUF_INIT;
	int ret = raft_setup(ha, &err);

	pthread_mutex_lock(&ha->lock);
	ha->started = ret ? -1 : 1;
	if (ret)
		snprintf(ha->start_err, sizeof(ha->start_err), "%s", err.data);
	pthread_cond_broadcast(&ha->cond);
	pthread_mutex_unlock(&ha->lock);
	buf_release(&err);
	if (ret) {
		setup_undo(ha);
		return NULL;
	}
	uv_run(&ha->loop, UV_RUN_DEFAULT);
	uv_loop_close(&ha->loop);
	return NULL;
}

static uint64_t random_u64(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
	       ((uint64_t)getpid() << 40);
}

int ha_start(const struct ha_config *cfg, struct db *db, struct ha **out,
	     struct buf *err)
{
	struct ha *ha;
	struct db_replica_hook hook;
	int ret;

	*out = NULL;
	ret = db_replica_check_tables(db, err);
	if (!ret)
		ret = check_new_member(cfg, db, err);
	if (ret)
		return ret;
	if (mkdir(cfg->dir, 0700) && errno != EEXIST) {
		(void)buf_addf(err, "cannot create %s: %s", cfg->dir,
			       strerror(errno));
		return ERR_IO;
	}
	ha = xcalloc(1, sizeof(*ha));
	ha->cfg = cfg;
	ha->db = db;
	ha->incarnation = random_u64();
	pthread_mutex_init(&ha->lock, NULL);
	pthread_cond_init(&ha->cond, NULL);
	hook.propose = propose;
	hook.applied = applied;
	hook.arg = ha;
	db_replica_set_hook(db, &hook);
	if (pthread_create(&ha->thread, NULL, ha_main, ha)) {
		db_replica_set_hook(db, NULL);
		free(ha);
		(void)buf_addf(err, "cannot start the raft thread");
		return ERR_INTERNAL;
	}
	pthread_mutex_lock(&ha->lock);
	while (!ha->started)
		pthread_cond_wait(&ha->cond, &ha->lock);
	pthread_mutex_unlock(&ha->lock);
	if (ha->started < 0) {
		(void)buf_addf(err, "%s", ha->start_err);
		pthread_join(ha->thread, NULL);
		db_replica_set_hook(db, NULL);
		pthread_mutex_destroy(&ha->lock);
		pthread_cond_destroy(&ha->cond);
		free(ha);
		return ERR_IO;
	}
	log_info("member %u of %zu, raft in %s", cfg->self, cfg->n_members,
		 cfg->dir);
	*out = ha;
	return 0;
}

int ha_ready(struct ha *ha)
{
	/* Every request asks (ha_serving()): no lock. The role is written
	 * under ha->lock, atomically. */
	return __atomic_load_n(&ha->role, __ATOMIC_ACQUIRE) == ROLE_READY;
}

int ha_serving(struct ha *ha)
{
	int64_t last = __atomic_load_n(&ha->tick_ms, __ATOMIC_ACQUIRE);
	int64_t now = time_mono_ms();

	return ha_ready(ha) &&
	       now - last <= (int64_t)ha->cfg->election_ms / 2 &&
	       ha__lease_valid(&ha->lease, now);
}

uint64_t ha_term(struct ha *ha)
{
	return __atomic_load_n(&ha->term, __ATOMIC_ACQUIRE);
}

int ha_leader_url(struct ha *ha, char *out, size_t size)
{
	const struct ha_member *m;
	unsigned id;

	size_t i;
	int ret = -1;

	pthread_mutex_lock(&ha->lock);
	id = ha->leader_id;
	for (i = 0; i < ha->n_urls && id && id != ha->cfg->self; i++)
		if (ha->urls[i].id == id) {
			snprintf(out, size, "%s", ha->urls[i].api_url);
			ret = 0;
		}
	pthread_mutex_unlock(&ha->lock);
	m = id && id != ha->cfg->self ? ha_config_member(ha->cfg, id) : NULL;
	if (ret && m) {
		snprintf(out, size, "%s", m->api_url);
		ret = 0;
	}
	return ret;
}

static void urls_free(struct ha_member *m, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(m[i].raft_addr);
		free(m[i].api_url);
	}
	free(m);
}

void ha_members_set(struct ha *ha, const struct ha_member *m, size_t n)
{
	struct ha_member *copy = n ? xcalloc(n, sizeof(*copy)) : NULL;
	struct ha_member *old;
	size_t i, n_old;

	for (i = 0; i < n; i++) {
		copy[i].id = m[i].id;
		copy[i].raft_addr = xstrdup(m[i].raft_addr);
		copy[i].api_url = xstrdup(m[i].api_url);
	}
	pthread_mutex_lock(&ha->lock);
	old = ha->urls;
	n_old = ha->n_urls;
	ha->urls = copy;
	ha->n_urls = n;
	pthread_mutex_unlock(&ha->lock);
	urls_free(old, n_old);
}

uint64_t ha_config_version(struct ha *ha)
{
	return __atomic_load_n(&ha->conf_version, __ATOMIC_ACQUIRE);
}

/*
 * Runs one call on raft's thread and waits for its outcome (raft's code),
 * after any other caller's.
 */
static int loop_call(struct ha *ha, enum call_kind kind, unsigned id,
		     const char *addr, struct ha_status *status)
{
	struct ha_call *c = kind == CALL_STATUS ? &ha->status_call :
						  &ha->change_call;
	int rv;

	pthread_mutex_lock(&ha->lock);
	while (c->state != CALL_IDLE && !ha->stopping)
		pthread_cond_wait(&ha->cond, &ha->lock);
	if (ha->stopping) {
		pthread_mutex_unlock(&ha->lock);
		return RAFT_SHUTDOWN;
	}
	c->kind = kind;
	c->id = id;
	snprintf(c->addr, sizeof(c->addr), "%s", addr ? addr : "");
	c->status = status;
	c->state = CALL_QUEUED;
	uv_async_send(&ha->wake);
	while (c->state != CALL_DONE)
		pthread_cond_wait(&ha->cond, &ha->lock);
	rv = c->rv;
	c->state = CALL_IDLE;
	pthread_cond_broadcast(&ha->cond);
	pthread_mutex_unlock(&ha->lock);
	return rv;
}

int ha_status(struct ha *ha, struct ha_status *out, struct buf *err)
{
	if (loop_call(ha, CALL_STATUS, 0, NULL, out)) {
		(void)buf_addf(err, "this member does not lead");
		return ERR_IO;
	}
	return 0;
}

int ha_member_add(struct ha *ha, unsigned id, const char *raft_addr,
		  struct buf *err)
{
	int rv = loop_call(ha, CALL_ADD, id, raft_addr, NULL);

	return rv ? ha__change_error(rv, id, err) : 0;
}

int ha_member_remove(struct ha *ha, unsigned id, struct buf *err)
{
	int rv = loop_call(ha, CALL_REMOVE, id, NULL, NULL);

	return rv ? ha__change_error(rv, id, err) : 0;
}

int ha_recover(const struct ha_config *cfg, struct buf *err)
{
	const struct ha_member *me = ha_config_member(cfg, cfg->self);
	struct raft_configuration conf;
	struct ha *ha;
	int rv, ret = 0;

	if (raft_dir_new(cfg->dir)) {
		(void)buf_addf(err, "%s holds no raft log: nothing to recover",
			       cfg->dir);
		return ERR_INVALID;
	}
	ha = xcalloc(1, sizeof(*ha));
	ha->cfg = cfg;
	if (raft_open(ha, err)) {
		setup_undo(ha);
		free(ha);
		return ERR_IO;
	}
	raft_configuration_init(&conf);
	rv = raft_configuration_add(&conf, me->id, me->raft_addr, RAFT_VOTER);
	if (!rv)
		rv = raft_recover(&ha->raft, &conf);
	raft_configuration_close(&conf);
	if (rv) {
		(void)buf_addf(err, "cannot recover raft in %s: %s (%s)",
			       cfg->dir, raft_strerror(rv),
			       raft_errmsg(&ha->raft));
		ret = ERR_IO;
	}
	raft_close(&ha->raft, on_raft_closed);
	uv_run(&ha->loop, UV_RUN_DEFAULT);
	uv_loop_close(&ha->loop);
	free(ha);
	return ret;
}

void ha_stop(struct ha *ha)
{
	if (!ha)
		return;
	pthread_mutex_lock(&ha->lock);
	ha->stopping = 1;
	pthread_cond_broadcast(&ha->cond);
	pthread_mutex_unlock(&ha->lock);
	uv_async_send(&ha->wake);
	pthread_join(ha->thread, NULL);
	db_replica_set_hook(ha->db, NULL);
	pthread_mutex_destroy(&ha->lock);
	pthread_cond_destroy(&ha->cond);
	urls_free(ha->urls, ha->n_urls);
	free(ha);
}
