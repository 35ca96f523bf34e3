/*
 * Tests ha/: --peers parsing, and three members in this process on
 * loopback, each with its own store and raft folder: one leads, its
 * writes reach the others, a follower refuses writes, and a member that
 * missed more than the log keeps catches up from a snapshot. A fourth
 * member joins and leaves; a lone survivor is recovered.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ha/ha.h"
#include "db/db.h"
#include "db/replica.h"
#include "common/buf.h"
#include "common/err.h"

#include "tests/db/fixture.h"

#define N 3

static void parse_fails(const char *spec, unsigned self, const char *want)
{
	struct ha_config cfg;
	struct buf err = BUF_INIT;

	memset(&cfg, 0, sizeof(cfg));
	assert_int_equal(ha_config_parse_peers(&cfg, spec, self, &err),
			 ERR_INVALID);
	if (!strstr(err.data, want))
		fail_msg("'%s': error '%s' lacks '%s'", spec, err.data, want);
	assert_null(cfg.members);
	buf_release(&err);
}

static void test_peers(void **state)
{
	struct ha_config cfg;
	struct buf err = BUF_INIT;

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	assert_int_equal(ha_config_parse_peers(&cfg,
					       "1=127.0.0.1:7001=http://"
					       "127.0.0.1:8001,2=10.0.0.2:7001="
					       "http://10.0.0.2:8001,3=h3:7001="
					       "http://h3:8001",
					       2, &err),
			 0);
	assert_int_equal(cfg.n_members, 3);
	assert_int_equal(cfg.self, 2);
	assert_string_equal(ha_config_member(&cfg, 3)->raft_addr, "h3:7001");
	assert_string_equal(ha_config_member(&cfg, 1)->api_url,
			    "http://127.0.0.1:8001");
	assert_null(ha_config_member(&cfg, 4));
	ha_config_release(&cfg);
	parse_fails("1=a:1=http://a:2,2=b:1=http://b:2", 1, "3 members");
	parse_fails("1=a:1=http://a:2,1=b:1=http://b:2,3=c:1=http://c:2", 1,
		    "share an id");
	parse_fails("1=a:1=http://a:2,2=a:1=http://b:2,3=c:1=http://c:2", 1,
		    "share an id or an address");
	parse_fails("1=a:1=http://a:2,2=b:1=http://b:2,3=c:1=http://c:2", 4,
		    "--member 4 is not among");
	parse_fails("1=a=http://a:2,2=b:1=http://b:2,3=c:1=http://c:2", 1,
		    "not HOST:PORT");
	parse_fails("1=a:1=https://a:2,2=b:1=http://b:2,3=c:1=http://c:2", 1,
		    "not http://HOST:PORT");
	parse_fails("x=a:1=http://a:2,2=b:1=http://b:2,3=c:1=http://c:2", 1,
		    "member id 'x'");
	parse_fails("1=a:1", 1, "ID=RAFTADDR=APIURL");
	buf_release(&err);
}

/* A port nothing listens on now. */
static int free_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int port;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

struct member {
	struct ha_config cfg;
	struct db *db;
	struct ha *ha;
};

static struct member members[N];

static void member_start(struct fixture *f, int i)
{
	struct buf err = BUF_INIT;
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/m%d.db", f->dir, i + 1);
	if (db_open(path, 2, &members[i].db, &err) ||
	    ha_start(&members[i].cfg, members[i].db, &members[i].ha, &err))
		fail_msg("member %d: %s", i + 1, err.data);
	buf_release(&err);
}

static void member_stop(int i)
{
	ha_stop(members[i].ha);
	members[i].ha = NULL;
	db_close(members[i].db);
	members[i].db = NULL;
}

static void cluster_start(struct fixture *f, unsigned snapshot_entries)
{
	struct buf spec = BUF_INIT;
	struct buf err = BUF_INIT;
	int i;

	for (i = 0; i < N; i++)
		(void)buf_addf(&spec, "%s%d=127.0.0.1:%d=http://127.0.0.1:%d",
			       i ? "," : "", i + 1, free_port(), free_port());
	for (i = 0; i < N; i++) {
		struct ha_config *c = &members[i].cfg;
		struct buf dir = BUF_INIT;

		memset(c, 0, sizeof(*c));
		if (ha_config_parse_peers(c, spec.data, (unsigned)i + 1, &err))
			fail_msg("%s", err.data);
		(void)buf_addf(&dir, "%s/raft%d", f->dir, i + 1);
		c->dir = buf_detach(&dir, NULL);
		c->election_ms = 300;
		c->heartbeat_ms = 50;
		c->snapshot_entries = snapshot_entries;
		c->argv = NULL;
		member_start(f, i);
	}
	buf_release(&spec);
	buf_release(&err);
}

static void cluster_stop(void)
{
	int i;

	for (i = 0; i < N; i++) {
		if (members[i].ha)
			member_stop(i);
		remove_tree(members[i].cfg.dir);
		free(members[i].cfg.dir);
		ha_config_release(&members[i].cfg);
	}
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int wait_leader(void)
{
	int tries, i;

	for (tries = 0; tries < 500; tries++) {
		for (i = 0; i < N; i++)
			if (members[i].ha && ha_ready(members[i].ha))
				return i;
		sleep_ms(20);
	}
	fail_msg("no leader after 10 s");
	return -1;
}

static void wait_applied(int i, uint64_t index)
{
	int tries;

	for (tries = 0; tries < 500; tries++) {
		if (db_replica_applied(members[i].db) >= index)
			return;
		sleep_ms(20);
	}
	fail_msg("member %d applied %llu, not %llu", i + 1,
		 (unsigned long long)db_replica_applied(members[i].db),
		 (unsigned long long)index);
}

static void insert(struct db *db, const char *name)
{
	struct db_job j = make_job(name, "InProgress", "Starting", T0);
	struct buf err = BUF_INIT;

	if (db_job_insert(db, &j, "Starting the training job", &err))
		fail_msg("insert %s: %s", name, err.data);
	buf_release(&err);
}

static void assert_has(struct db *db, const char *name)
{
	struct db_job j;
	struct buf err = BUF_INIT;

	if (db_job_get(db, name, &j, &err))
		fail_msg("%s: %s", name, err.data);
	db_job_release(&j);
	buf_release(&err);
}

/* The fixture's own store is not used: each member opens its own. */
static void test_replicated(void **state)
{
	struct fixture *f = *state;
	struct db_job j = make_job("on-follower", "InProgress", "Starting", T0);
	struct buf err = BUF_INIT;
	char url[128];
	int lead, fol, i;

	cluster_start(f, 1024);
	lead = wait_leader();
	fol = (lead + 1) % N;
	insert(members[lead].db, "job-a");
	insert(members[lead].db, "job-b");
	for (i = 0; i < N; i++) {
		wait_applied(i, db_replica_applied(members[lead].db));
		assert_has(members[i].db, "job-a");
		assert_has(members[i].db, "job-b");
	}
	/* A follower's store takes no write of its own. */
	assert_int_equal(db_job_insert(members[fol].db, &j, "m", &err), ERR_DB);
	assert_non_null(strstr(err.data, "not the leader"));
	/* It knows where the leader's API is; the leader forwards nowhere. */
	assert_int_equal(ha_leader_url(members[fol].ha, url, sizeof(url)), 0);
	assert_string_equal(url, members[lead].cfg.members[lead].api_url);
	assert_int_equal(ha_leader_url(members[lead].ha, url, sizeof(url)), -1);
	cluster_stop();
	buf_release(&err);
}

/* A member down while the log moved past a snapshot catches up from it. */
static void test_snapshot(void **state)
{
	struct fixture *f = *state;
	char name[32];
	int lead, down, i;

	cluster_start(f, 16);
	lead = wait_leader();
	down = (lead + 1) % N;
	insert(members[lead].db, "before");
	wait_applied(down, db_replica_applied(members[lead].db));
	member_stop(down);
	for (i = 0; i < 60; i++) {
		snprintf(name, sizeof(name), "while-down-%d", i);
		insert(members[lead].db, name);
	}
	member_start(f, down);
	wait_applied(down, db_replica_applied(members[lead].db));
	assert_has(members[down].db, "before");
	assert_has(members[down].db, "while-down-0");
	assert_has(members[down].db, "while-down-59");
	/* And it follows on from there. */
	insert(members[lead].db, "after");
	wait_applied(down, db_replica_applied(members[lead].db));
	assert_has(members[down].db, "after");
	cluster_stop();
}

/* A fourth member, started with join: its peers the three and itself. */
static struct member joiner;

static void joiner_config(struct fixture *f)
{
	struct buf spec = BUF_INIT, err = BUF_INIT, dir = BUF_INIT;
	int i;

	for (i = 0; i < N; i++) {
		const struct ha_member *m = &members[0].cfg.members[i];

		(void)buf_addf(&spec, "%u=%s=%s,", m->id, m->raft_addr,
			       m->api_url);
	}
	(void)buf_addf(&spec, "4=127.0.0.1:%d=http://127.0.0.1:%d", free_port(),
		       free_port());
	memset(&joiner.cfg, 0, sizeof(joiner.cfg));
	if (ha_config_parse_peers(&joiner.cfg, spec.data, 4, &err))
		fail_msg("%s", err.data);
	(void)buf_addf(&dir, "%s/raft4", f->dir);
	joiner.cfg.dir = buf_detach(&dir, NULL);
	joiner.cfg.election_ms = 300;
	joiner.cfg.heartbeat_ms = 50;
	joiner.cfg.snapshot_entries = 16;
	joiner.cfg.join = 1;
	buf_release(&spec);
	buf_release(&err);
}

static void joiner_start(struct fixture *f)
{
	struct buf err = BUF_INIT;
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/m4.db", f->dir);
	if (db_open(path, 2, &joiner.db, &err) ||
	    ha_start(&joiner.cfg, joiner.db, &joiner.ha, &err))
		fail_msg("member 4: %s", err.data);
	buf_release(&err);
}

static void joiner_stop(void)
{
	ha_stop(joiner.ha);
	joiner.ha = NULL;
	db_close(joiner.db);
	joiner.db = NULL;
	remove_tree(joiner.cfg.dir);
	free(joiner.cfg.dir);
	ha_config_release(&joiner.cfg);
}

/*
 * A member joins: refused changes first, then added (it catches up from
 * a snapshot and the log and becomes a voter), then removed.
 */
static void test_membership(void **state)
{
	struct fixture *f = *state;
	struct buf err = BUF_INIT;
	struct ha_status st;
	char raft_addr[] = "h:1", api_url[] = "http://from-the-store:9";
	struct ha_member url = { 0, raft_addr, api_url };
	const struct ha_member *m4;
	char name[32], got[128];
	int lead, fol, i;

	cluster_start(f, 16);
	lead = wait_leader();
	fol = (lead + 1) % N;
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "before-%d", i);
		insert(members[lead].db, name);
	}
	joiner_config(f);
	m4 = ha_config_member(&joiner.cfg, 4);
	assert_int_equal(ha_status(members[fol].ha, &st, &err), ERR_IO);
	assert_int_equal(ha_member_add(members[lead].ha, 2, "127.0.0.1:9",
				       &err),
			 ERR_CONFLICT);
	assert_non_null(strstr(err.data, "member 2 is a member already"));
	buf_reset(&err);
	assert_int_equal(ha_member_remove(members[lead].ha, 99, &err),
			 ERR_NOTFOUND);
	assert_non_null(strstr(err.data, "member 99 is not a member"));
	/* Not running yet: it stays a spare, and the members are seen. */
	buf_reset(&err);
	assert_int_equal(ha_member_add(members[lead].ha, 4, m4->raft_addr,
				       &err),
			 ERR_IO);
	assert_non_null(strstr(err.data, "member 4 did not answer"));
	assert_int_equal(ha_status(members[lead].ha, &st, &err), 0);
	assert_int_equal(ha_status_member(&st, 4)->role, HA_ROLE_SPARE);
	assert_false(ha_status_member(&st, 4)->reachable);
	/* Started, the same add makes it a voter once caught up. */
	joiner_start(f);
	assert_int_equal(
		ha_member_add(members[lead].ha, 4, m4->raft_addr, &err), 0);
	assert_int_equal(ha_status(members[lead].ha, &st, &err), 0);
	assert_int_equal(st.n, 4);
	assert_int_equal(st.leader_id, members[lead].cfg.self);
	assert_int_equal(ha_status_member(&st, 4)->role, HA_ROLE_VOTER);
	assert_int_equal(ha_status_member(&st, st.leader_id)->role,
			 HA_ROLE_LEADER);
	insert(members[lead].db, "after-add");
	wait_applied(lead, db_replica_applied(members[lead].db));
	for (i = 0; i < 500 && db_replica_applied(joiner.db) <
				       db_replica_applied(members[lead].db);
	     i++)
		sleep_ms(20);
	assert_has(joiner.db, "before-0");
	assert_has(joiner.db, "before-39");
	assert_has(joiner.db, "after-add");
	/* Its address is taken now. */
	buf_reset(&err);
	assert_int_equal(ha_member_add(members[lead].ha, 5, m4->raft_addr,
				       &err),
			 ERR_CONFLICT);
	/* A follower looks for the leader's API in the store's URLs first. */
	url.id = members[lead].cfg.self;
	ha_members_set(members[fol].ha, &url, 1);
	assert_int_equal(ha_leader_url(members[fol].ha, got, sizeof(got)), 0);
	assert_string_equal(got, "http://from-the-store:9");
	/* Removed. */
	assert_int_equal(ha_member_remove(members[lead].ha, 4, &err), 0);
	assert_int_equal(ha_status(members[lead].ha, &st, &err), 0);
	assert_int_equal(st.n, 3);
	assert_null(ha_status_member(&st, 4));
	insert(members[lead].db, "after-remove");
	joiner_stop();
	cluster_stop();
	buf_release(&err);
}

/* The leader's raft folder, recovered alone, leads a cluster of one. */
static void test_recover(void **state)
{
	struct fixture *f = *state;
	struct buf err = BUF_INIT;
	struct ha_status st;
	struct ha_config lone;
	char dir[300];
	int lead, i;

	cluster_start(f, 1024);
	lead = wait_leader();
	insert(members[lead].db, "kept");
	for (i = 0; i < N; i++)
		member_stop(i);
	/* A folder without a raft log has nothing to recover. */
	lone = members[lead].cfg;
	snprintf(dir, sizeof(dir), "%s/empty", f->dir);
	lone.dir = dir;
	assert_int_equal(ha_recover(&lone, &err), ERR_INVALID);
	assert_non_null(strstr(err.data, "holds no raft log"));
	buf_reset(&err);
	if (ha_recover(&members[lead].cfg, &err))
		fail_msg("%s", err.data);
	member_start(f, lead);
	assert_int_equal(wait_leader(), lead);
	assert_has(members[lead].db, "kept");
	insert(members[lead].db, "alone");
	assert_int_equal(ha_status(members[lead].ha, &st, &err), 0);
	assert_int_equal(st.n, 1);
	cluster_stop();
	buf_release(&err);
}

/* A store with data cannot become a member with a new raft folder. */
static void test_refuses_data(void **state)
{
	struct fixture *f = *state;
	struct ha_config cfg;
	struct buf err = BUF_INIT;
	struct ha *ha = NULL;
	char spec[256];
	char dir[300];

	insert(f->db, "single-node-job");
	snprintf(spec, sizeof(spec),
		 "1=127.0.0.1:%d=http://127.0.0.1:1,2=127.0.0.1:%d=http://"
		 "127.0.0.1:2,3=127.0.0.1:%d=http://127.0.0.1:3",
		 free_port(), free_port(), free_port());
	memset(&cfg, 0, sizeof(cfg));
	assert_int_equal(ha_config_parse_peers(&cfg, spec, 1, &err), 0);
	snprintf(dir, sizeof(dir), "%s/raft", f->dir);
	cfg.dir = dir;
	cfg.election_ms = 300;
	cfg.heartbeat_ms = 50;
	cfg.snapshot_entries = 64;
	assert_int_not_equal(ha_start(&cfg, f->db, &ha, &err), 0);
	assert_null(ha);
	assert_non_null(strstr(err.data, "holds data"));
	/* Nothing was written there: a second start is refused too. */
	buf_reset(&err);
	assert_int_not_equal(ha_start(&cfg, f->db, &ha, &err), 0);
	assert_non_null(strstr(err.data, "holds data"));
	ha_config_release(&cfg);
	remove_tree(dir);
	buf_release(&err);
}

/* Raft's address taken: the start fails, and undoes what it set up. */
static void test_start_fails(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	struct ha_config cfg;
	struct buf err = BUF_INIT;
	struct ha *ha = NULL;
	char spec[256];
	char dir[300];
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 1), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	snprintf(spec, sizeof(spec),
		 "1=127.0.0.1:%d=http://127.0.0.1:1,2=127.0.0.1:%d=http://"
		 "127.0.0.1:2,3=127.0.0.1:%d=http://127.0.0.1:3",
		 ntohs(a.sin_port), free_port(), free_port());
	memset(&cfg, 0, sizeof(cfg));
	assert_int_equal(ha_config_parse_peers(&cfg, spec, 1, &err), 0);
	snprintf(dir, sizeof(dir), "%s/raft", f->dir);
	cfg.dir = dir;
	cfg.election_ms = 300;
	cfg.heartbeat_ms = 50;
	cfg.snapshot_entries = 64;
	assert_int_not_equal(ha_start(&cfg, f->db, &ha, &err), 0);
	assert_null(ha);
	assert_non_null(strstr(err.data, "raft"));
	/* Without replication the store writes again. */
	insert(f->db, "after-failed-start");
	close(fd);
	ha_config_release(&cfg);
	remove_tree(dir);
	buf_release(&err);
}

int main(void)
{
	/* A member stopped closes its connections: writes to them must
	 * fail, not kill the process (trainctld ignores SIGPIPE too). */
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_peers),
		cmocka_unit_test_setup_teardown(test_replicated, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_snapshot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_membership, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_recover, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refuses_data, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_start_fails, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
